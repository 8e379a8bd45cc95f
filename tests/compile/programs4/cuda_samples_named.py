"""The six CUDA samples issue 46 names: reduction, shfl_scan, globalToShmemAsyncCopy, fp16ScalarProduct,
cudaTensorCoreGemm, jacobiCudaGraphs (NVIDIA/cuda-samples, BSD-3-Clause), in the issue's order. Each is written
after the sample's .cu file, in a module per family of the samples' tree:
  cuda_samples_concepts.py      2_Concepts_and_Techniques: reduction, shfl_scan
  cuda_samples_introduction.py  0_Introduction: fp16ScalarProduct
  cuda_samples_features.py      3_CUDA_Features: globalToShmemAsyncCopy, cudaTensorCoreGemm, jacobiCudaGraphs
"""
from cuda_samples_concepts import CONCEPTS_SAMPLES
from cuda_samples_features import FEATURES_SAMPLES
from cuda_samples_introduction import INTRODUCTION_SAMPLES

_BY_NAME = {p.name: p for p in [*CONCEPTS_SAMPLES, *INTRODUCTION_SAMPLES, *FEATURES_SAMPLES]}

NAMED_SAMPLES = [_BY_NAME["cuda_samples_" + name] for name in (
    "reduction", "shfl_scan", "globalToShmemAsyncCopy", "fp16ScalarProduct", "cudaTensorCoreGemm", "jacobiCudaGraphs")]
