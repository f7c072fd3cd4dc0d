"""The one exception type of Tessera's compiler and runtime."""


class TesseraError(ValueError):
    """An error reported by the Tessera compiler or runtime."""


TesseraError.__module__ = "tessera"
