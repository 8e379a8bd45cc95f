// xcuda stand-in for PyTorch's <torch/extension.h> under NVRTC: see the stand-in for <torch/types.h>, which this
// includes. A header of this name in a -I folder or a header cell is taken instead of this one.
#pragma once
#include <torch/types.h>
