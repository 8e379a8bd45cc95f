set -uo pipefail
NCCL_SO=$(find / -xdev -name 'libnccl.so.2*' 2>/dev/null | head -1); echo "nccl: $NCCL_SO"
source .devrt/runtime-env.sh >/dev/null
mkdir -p /tmp/site && for w in .gpunccl/wheels/*.whl; do python3 -c "import zipfile,sys; zipfile.ZipFile(sys.argv[1]).extractall('/tmp/site')" $w; done
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH} LD_LIBRARY_PATH=$(dirname "$NCCL_SO")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} XCUDA_BUILD_DIR=$PWD/.gpunccl/build
python3 -c "import nccl.core as n; print('nccl4py', n.__version__)" 2>&1 | tail -3
timeout 300 python3 -m pytest tests/kernel/test_collectives.py tests/kernel/test_engines.py tests/kernel/test_several_hosts.py tests/compile/test_programs3.py tests/compile/test_host_code.py -q -p no:cacheprovider -rfs 2>&1 | tail -25
