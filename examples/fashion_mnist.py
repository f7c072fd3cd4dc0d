"""Trains a classifier on Fashion-MNIST with Tessera on the CPU.

    python examples/fashion_mnist.py [--epochs 10] [--out build/demo]

The model (a 784-512-256-10 MLP), its loss, gradient and AdamW update are
one traced function compiled once (the batch dim B is symbolic, so the
last, smaller batch reuses it). Writes a checkpoint and a plot of the loss
and accuracy curves.
"""

import argparse
import os
import time

import numpy as np

import tessera as ts
from tessera import datasets, io, nn, op, optim, training


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="build/demo")
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    train_images, train_labels = datasets.fashion_mnist("train")
    test_images, test_labels = datasets.fashion_mnist("test")
    mean, std = train_images.mean() / 255.0, train_images.std() / 255.0

    def prepare(images):  # uint8 [N, 28, 28] -> f32 [N, 784], standardized
        x = images.reshape(len(images), -1).astype(np.float32) / 255.0
        return (x - np.float32(mean)) / np.float32(std)

    x_train, x_test = prepare(train_images), prepare(test_images)
    rng = nn.rng(args.seed)
    params = nn.mlp_init(rng, [784, 512, 256, 10])
    opt = optim.adamw(args.lr, weight_decay=1e-4)
    steps_per_epoch = -(-len(x_train) // args.batch)
    schedule = optim.cosine_schedule(args.lr, args.epochs * steps_per_epoch,
                                     warmup_steps=200)

    @ts.jit
    def train_step(params, opt_state, x: ts.Tensor["B", 784, ts.f32],
                   y: ts.Tensor["B", ts.i32], lr):
        def loss_fn(p):
            return op.cross_entropy(nn.mlp(p, x), y)

        loss, grads = ts.value_and_grad(loss_fn)(params)
        params, opt_state = opt.update(grads, opt_state, params, lr=lr)
        return params, opt_state, loss

    @ts.jit
    def predict(params, x: ts.Tensor["B", 784, ts.f32]):
        return op.argmax(nn.mlp(params, x), -1)

    def step(carry, x, y, index):
        params, opt_state = carry
        lr = np.float32(schedule(index))
        params, opt_state, loss = train_step(params, opt_state, x, y, lr)
        return (params, opt_state), {"loss": loss}

    def evaluate(carry):
        params, _ = carry
        pred = np.concatenate([predict(params, x_test[i:i + 1000])
                               for i in range(0, len(x_test), 1000)])
        return {"test_accuracy": training.accuracy(pred, test_labels)}

    data_rng = np.random.default_rng(args.seed)
    start = time.perf_counter()
    (params, opt_state), history = training.fit(
        step, (params, opt.init(params)),
        lambda epoch: datasets.batches((x_train, train_labels), args.batch,
                                       data_rng),
        epochs=args.epochs, evaluate=evaluate,
        progress=not args.no_progress, steps_per_epoch=steps_per_epoch)
    total = time.perf_counter() - start

    ckpt = os.path.join(args.out, "fashion_mnist_mlp.npz")
    io.save(ckpt, params)
    restored = io.load(ckpt, params)
    assert training.accuracy(np.concatenate(
        [predict(restored, x_test[i:i + 1000])
         for i in range(0, len(x_test), 1000)]), test_labels) == \
        history["test_accuracy"][-1]
    history.save(os.path.join(args.out, "fashion_mnist_history.json"))
    plot = os.path.join(args.out, "fashion_mnist_curves.png")
    save_plot(history, plot)
    acc = history["test_accuracy"][-1]
    print(f"test accuracy {acc:.4f} after {args.epochs} epochs "
          f"({total:.1f} s on {ts.num_threads()} threads); checkpoint {ckpt}, "
          f"plot {plot}")
    if acc < 0.88:
        raise SystemExit(f"test accuracy {acc:.4f} is below 0.88")


def save_plot(history, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    epochs = np.arange(1, len(history["train_loss"]) + 1)
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.5))
    a.plot(epochs, history["train_loss"], marker="o")
    a.set_xlabel("epoch"), a.set_ylabel("training loss"), a.grid(alpha=0.3)
    b.plot(epochs, history["test_accuracy"], marker="o", color="tab:green")
    b.set_xlabel("epoch"), b.set_ylabel("test accuracy"), b.grid(alpha=0.3)
    fig.suptitle("Tessera: Fashion-MNIST MLP (CPU)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    main()
