"""What xcuda's C++ asks of the IPython shell it runs in, in one place (the binding imports no IPython).

Outside IPython (a script, a plain Python prompt) every function here still answers: IPython is optional.
"""


def user_namespace():
    """The user's namespace: the running IPython shell's, else __main__'s (a script or a plain prompt)."""
    try:
        from IPython import get_ipython
    except ImportError:
        get_ipython = None
    shell = get_ipython() if get_ipython is not None else None
    if shell is not None:
        return shell.user_ns
    import __main__

    return __main__.__dict__
