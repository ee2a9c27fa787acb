"""placeholder"""
name = "web"


def apply(ctx, config=None):
    return None
