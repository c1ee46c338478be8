// im2col and its adjoint for one NCHW sample. The column matrix is [col_rows, col_cols] row-major:
// row (c, ki, kj), column (oh, ow) holds input (c, oh*stride - pad + ki, ow*stride - pad + kj), or
// 0 where that falls into the padding. The loops split each output row into padding / interior /
// padding ranges up front, so the inner loops carry no bounds branches.
#pragma once

#include "engine/conv_geom.h"

namespace psrt::engine {

// img: in_c x in_h x in_w; col: col_rows() x col_cols() (fully written).
void im2col(const float* img, const ConvGeom& g, float* col);
// img += col2im(col): scatters each column entry back onto the input pixel it came from.
void col2im_add(const float* col, const ConvGeom& g, float* img);

}  // namespace psrt::engine
