"""The ``ralph`` built-in plugin (off by default): placeholder until the tool lands."""

name = "ralph"


def apply(ctx, config=None):  # noqa: ANN001, ANN201
    return None
