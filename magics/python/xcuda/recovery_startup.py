# PYTHONSTARTUP of an ipykernel process that %cuda_recover replaced: loading the xcuda extension
# restores the variables the old process carried over (see xcuda/recovery.py).
get_ipython().run_line_magic("load_ext", "xcuda")  # noqa: F821 (IPython defines get_ipython)
