// The SDPA graphs of sdpa_graph.h, node by node.
#include "cudnn/sdpa_graph.h"

#include <cstdio>
#include <tuple>

namespace fb::cuda::cudnn_sdpa {

BackendDesc::BackendDesc(cudnnBackendDescriptorType_t type) {
  FB_CUDNN_CHECK(cudnnBackendCreateDescriptor(type, &d_));
}

BackendDesc::~BackendDesc() {
  if (!d_) return;
  const cudnnStatus_t st = cudnnBackendDestroyDescriptor(d_);
  if (st != CUDNN_STATUS_SUCCESS)
    std::fprintf(stderr, "flashbench: cudnnBackendDestroyDescriptor: %s\n", cudnnGetErrorString(st));
}

bool Shape::operator<(const Shape& o) const {
  const auto tie = [](const Shape& s) {
    return std::tie(s.dtype, s.batch, s.heads, s.kv_heads, s.seq_q, s.seq_k, s.head_dim, s.causal, s.padding_mask,
                    s.o_bshd, s.qkv_bshd, s.no_stats);
  };
  return tie(*this) < tie(o);
}

Shape shape_of(const AttentionParams& p) {
  Shape s;
  s.dtype = p.dtype;
  s.batch = p.batch;
  s.heads = p.heads;
  s.kv_heads = p.kv_heads;
  s.seq_q = p.seq_q;
  s.seq_k = p.seq_k;
  s.head_dim = p.head_dim;
  s.causal = p.causal;
  return s;
}

std::size_t row_dot_bytes(const Shape& s) { return std::size_t(s.batch * s.heads * s.seq_q) * sizeof(float); }
std::size_t dq_accum_bytes(const Shape& s) { return row_dot_bytes(s) * std::size_t(s.head_dim); }

namespace {

using Tensor = cudnnBackendDescriptor_t;

// Dimensions and strides of a 4-d tensor.
struct Layout {
  std::array<std::int64_t, 4> dim, stride;
};
// Contiguous [a, b, c, e].
Layout packed(std::int64_t a, std::int64_t b, std::int64_t c, std::int64_t e) {
  return {{a, b, c, e}, {b * c * e, c * e, e, 1}};
}
// The last two dimensions swapped, the memory untouched (K as K^T).
Layout transposed(Layout l) {
  std::swap(l.dim[2], l.dim[3]);
  std::swap(l.stride[2], l.stride[3]);
  return l;
}
const Layout kScalar = {{1, 1, 1, 1}, {1, 1, 1, 1}};

cudnnDataType_t io_type(Dtype t) { return t == Dtype::fp16 ? CUDNN_DATA_HALF : CUDNN_DATA_BFLOAT16; }
constexpr cudnnDataType_t kF32 = CUDNN_DATA_FLOAT;
constexpr cudnnDataType_t kI32 = CUDNN_DATA_INT32;
constexpr cudnnDataType_t kBool = CUDNN_DATA_BOOLEAN;
constexpr cudnnDataType_t kE4m3 = CUDNN_DATA_FP8_E4M3;
// Every tensor 16-byte aligned: the runner's allocations are, and cudnn-frontend declares the same.
constexpr std::int64_t kAlignment = 16;

cudnnBackendDescriptor_t make(Graph& g, cudnnBackendDescriptorType_t type) {
  g.descs.emplace_back(type);
  return g.descs.back().get();
}

Tensor tensor(Graph& g, std::int64_t uid, cudnnDataType_t type, const Layout& l, bool is_virtual,
              bool by_value = false) {
  const Tensor t = make(g, CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  FB_CUDNN_SET(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
  FB_CUDNN_SET(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, l.dim.data());
  FB_CUDNN_SET(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, l.stride.data());
  FB_CUDNN_SET(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
  FB_CUDNN_SET(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &kAlignment);
  FB_CUDNN_SET(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual);
  if (by_value) FB_CUDNN_SET(t, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &by_value);
  FB_CUDNN_CHECK(cudnnBackendFinalize(t));
  if (!is_virtual) g.uids.push_back(uid);
  return t;
}
Tensor io(Graph& g, Uid uid, cudnnDataType_t type, const Layout& l) { return tensor(g, uid, type, l, false); }
Tensor virt(Graph& g, cudnnDataType_t type, const Layout& l) { return tensor(g, g.next_virtual++, type, l, true); }
Tensor scalar(Graph& g, Uid uid, cudnnDataType_t type) {
  const auto it = g.scalars.find(uid);
  if (it != g.scalars.end()) return it->second;
  return g.scalars[uid] = tensor(g, uid, type, kScalar, false, true);
}

// Per-batch sizes of a GEMM (int32 [b, 1, 1, 1] tensors) where they may be below the tensors' own:
// what the padding mask comes with. Null: the tensors' size.
struct Overrides {
  Tensor m = nullptr, n = nullptr, k = nullptr;
};

// c = a b (batched over the first two dimensions; a K/V head broadcast over its query heads).
Tensor matmul(Graph& g, Tensor a, Tensor b, Tensor c, Overrides sizes = {}) {
  const auto m = make(g, CUDNN_BACKEND_MATMUL_DESCRIPTOR);
  FB_CUDNN_SET(m, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &kF32);
  FB_CUDNN_CHECK(cudnnBackendFinalize(m));
  const auto op = make(g, CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
  FB_CUDNN_SET(op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &a);
  FB_CUDNN_SET(op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b);
  FB_CUDNN_SET(op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &c);
  FB_CUDNN_SET(op, CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &m);
  if (sizes.m)
    FB_CUDNN_SET(op, CUDNN_ATTR_OPERATION_MATMUL_GEMM_M_OVERRIDE_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &sizes.m);
  if (sizes.n)
    FB_CUDNN_SET(op, CUDNN_ATTR_OPERATION_MATMUL_GEMM_N_OVERRIDE_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &sizes.n);
  if (sizes.k)
    FB_CUDNN_SET(op, CUDNN_ATTR_OPERATION_MATMUL_GEMM_K_OVERRIDE_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &sizes.k);
  FB_CUDNN_CHECK(cudnnBackendFinalize(op));
  g.ops.push_back(op);
  return c;
}

struct Pointwise {
  cudnnPointwiseMode_t mode;
  cudnnDataType_t math = kF32;
  std::int64_t axis = -1;  // GEN_INDEX only
};
// y = mode(x[, b[, t]]), broadcasting size-1 dimensions.
Tensor pointwise(Graph& g, Pointwise pw, Tensor y, Tensor x, Tensor b = nullptr, Tensor t = nullptr) {
  const auto d = make(g, CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
  FB_CUDNN_SET(d, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &pw.mode);
  FB_CUDNN_SET(d, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &pw.math);
  if (pw.mode == CUDNN_POINTWISE_GEN_INDEX)
    FB_CUDNN_SET(d, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &pw.axis);
  FB_CUDNN_CHECK(cudnnBackendFinalize(d));
  const auto op = make(g, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  FB_CUDNN_SET(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &d);
  FB_CUDNN_SET(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
  if (b) FB_CUDNN_SET(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b);
  if (t) FB_CUDNN_SET(op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t);
  FB_CUDNN_SET(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
  const float one = 1.0f;
  FB_CUDNN_SET(op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, CUDNN_TYPE_FLOAT, 1, &one);
  FB_CUDNN_SET(op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, CUDNN_TYPE_FLOAT, 1, &one);
  FB_CUDNN_CHECK(cudnnBackendFinalize(op));
  g.ops.push_back(op);
  return y;
}

// y = reduce(x) over the dimensions where y is smaller (size 1, or a GQA group of heads).
Tensor reduction(Graph& g, cudnnReduceTensorOp_t how, Tensor y, Tensor x) {
  const auto d = make(g, CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
  FB_CUDNN_SET(d, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &how);
  FB_CUDNN_SET(d, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &kF32);
  FB_CUDNN_CHECK(cudnnBackendFinalize(d));
  const auto op = make(g, CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
  FB_CUDNN_SET(op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
  FB_CUDNN_SET(op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
  FB_CUDNN_SET(op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &d);
  FB_CUDNN_CHECK(cudnnBackendFinalize(op));
  g.ops.push_back(op);
  return y;
}

// y = x seen with other dimensions/strides (a transpose of a virtual tensor).
Tensor reshape(Graph& g, Tensor y, Tensor x) {
  const auto op = make(g, CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR);
  FB_CUDNN_SET(op, CUDNN_ATTR_OPERATION_RESHAPE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
  FB_CUDNN_SET(op, CUDNN_ATTR_OPERATION_RESHAPE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
  FB_CUDNN_CHECK(cudnnBackendFinalize(op));
  g.ops.push_back(op);
  return y;
}

// The layouts one graph uses.
struct Layouts {
  Layout q, kv, kt, scores, scores_t, rows, q_full_kv;
  explicit Layouts(const Shape& s)
      : q(packed(s.batch, s.heads, s.seq_q, s.head_dim)),
        kv(packed(s.batch, s.kv_heads, s.seq_k, s.head_dim)),
        kt(transposed(kv)),
        scores(packed(s.batch, s.heads, s.seq_q, s.seq_k)),                 // (s_q, s_k) per head
        scores_t(transposed(scores)),                                       // the same, seen as (s_k, s_q)
        rows(packed(s.batch, s.heads, s.seq_q, 1)),                         // one value per query row
        q_full_kv(packed(s.batch, s.heads, s.seq_k, s.head_dim)) {}         // dK/dV per query head (GQA)
};

// Scores a causal query row must not see become -inf: key j is visible to row i when
// j <= i + (s_k - s_q), flashbench's bottom-right alignment (common/mask.h). Square shapes need no
// shift (top-left and bottom-right coincide), which is the cheaper graph cuDNN has long matched.
Tensor causal_mask(Graph& g, const Shape& s, const Layouts& l, Tensor scores) {
  Tensor row = pointwise(g, {CUDNN_POINTWISE_GEN_INDEX, kF32, 2}, virt(g, kI32, l.scores), scores);
  const Tensor col = pointwise(g, {CUDNN_POINTWISE_GEN_INDEX, kF32, 3}, virt(g, kI32, l.scores), scores);
  if (s.seq_q != s.seq_k) {
    row = pointwise(g, {CUDNN_POINTWISE_ADD, kI32}, virt(g, kI32, l.scores), row, scalar(g, kSeqK, kI32));
    row = pointwise(g, {CUDNN_POINTWISE_SUB, kI32}, virt(g, kI32, l.scores), row, scalar(g, kSeqQ, kI32));
  }
  const Tensor visible = pointwise(g, {CUDNN_POINTWISE_CMP_GE, kBool}, virt(g, kBool, l.scores), row, col);
  return pointwise(g, {CUDNN_POINTWISE_BINARY_SELECT}, virt(g, kF32, l.scores), scores,
                   scalar(g, kNegInf, kF32), visible);
}

// Scores outside a sequence's length become -inf: row < seq_len_q and column < seq_len_kv are kept
// (cudnn-frontend's padding mask, node for node). At the full lengths it keeps everything.
Tensor padding_mask(Graph& g, const Layouts& l, Tensor scores, Tensor seq_len_q, Tensor seq_len_kv) {
  const Tensor row = pointwise(g, {CUDNN_POINTWISE_GEN_INDEX, kI32, 2}, virt(g, kI32, l.scores), scores);
  const Tensor col = pointwise(g, {CUDNN_POINTWISE_GEN_INDEX, kI32, 3}, virt(g, kI32, l.scores), scores);
  const Tensor row_in = pointwise(g, {CUDNN_POINTWISE_CMP_LT, kBool}, virt(g, kBool, l.scores), row, seq_len_q);
  const Tensor col_in = pointwise(g, {CUDNN_POINTWISE_CMP_LT, kBool}, virt(g, kBool, l.scores), col, seq_len_kv);
  const Tensor in = pointwise(g, {CUDNN_POINTWISE_LOGICAL_AND, kBool}, virt(g, kBool, l.scores), row_in, col_in);
  return pointwise(g, {CUDNN_POINTWISE_BINARY_SELECT}, virt(g, kF32, l.scores), scores, scalar(g, kNegInf, kF32),
                   in);
}

// Softmax with its statistics: m = rowmax S, E = exp(S - m), r = rowsum E, LSE = m + log r (into
// `lse`); returns P = E / r as `p_type`. A null `lse`: no statistics (the LOG and ADD nodes left out,
// as cudnn-frontend's composite softmax without Stats).
Tensor softmax(Graph& g, const Layouts& l, Tensor S, Tensor lse, cudnnDataType_t p_type) {
  const Tensor m = reduction(g, CUDNN_REDUCE_TENSOR_MAX, virt(g, kF32, l.rows), S);
  const Tensor shifted = pointwise(g, {CUDNN_POINTWISE_SUB}, virt(g, kF32, l.scores), S, m);
  const Tensor E = pointwise(g, {CUDNN_POINTWISE_EXP}, virt(g, kF32, l.scores), shifted);
  const Tensor r = reduction(g, CUDNN_REDUCE_TENSOR_ADD, virt(g, kF32, l.rows), E);
  if (lse) {
    const Tensor log_r = pointwise(g, {CUDNN_POINTWISE_LOG}, virt(g, kF32, l.rows), r);
    pointwise(g, {CUDNN_POINTWISE_ADD}, lse, m, log_r);
  }
  return pointwise(g, {CUDNN_POINTWISE_DIV}, virt(g, p_type, l.scores), E, r);
}

}  // namespace

void build_forward(Graph& g, const Shape& s) {
  const Layouts l(s);
  const cudnnDataType_t t = io_type(s.dtype);
  const Tensor q = io(g, kQ, t, l.q);
  const Tensor kt = io(g, kK, t, l.kt);
  const Tensor v = io(g, kV, t, l.kv);
  const Tensor o = io(g, kO, t, l.q);
  const Tensor lse = s.no_stats ? nullptr : io(g, kStats, kF32, l.rows);
  const Tensor scale = scalar(g, kScale, kF32);

  // S = scale * Q K^T, masked.
  Tensor S = matmul(g, q, kt, virt(g, kF32, l.scores));
  S = pointwise(g, {CUDNN_POINTWISE_MUL}, virt(g, kF32, l.scores), S, scale);
  if (s.causal) S = causal_mask(g, s, l, S);
  // P in the inputs' type: the engine feeds it to the second GEMM as it would a stored operand.
  const Tensor P = softmax(g, l, S, lse, t);
  // O = P V.
  matmul(g, P, v, o);
}

void build_forward_fp8(Graph& g, const Shape& s, Fp8Out out) {
  const Layouts l(s);
  // [b, h, s, d] seen in [b, s, h, d] memory (Shape::o_bshd, Shape::qkv_bshd).
  const auto bshd = [](std::int64_t b, std::int64_t h, std::int64_t n, std::int64_t d) {
    return Layout{{b, h, n, d}, {n * h * d, d, h * d, 1}};
  };
  const Layout q_layout = s.qkv_bshd ? bshd(s.batch, s.heads, s.seq_q, s.head_dim) : l.q;
  const Layout kv_layout = s.qkv_bshd ? bshd(s.batch, s.kv_heads, s.seq_k, s.head_dim) : l.kv;
  const Tensor q = io(g, kQ, kE4m3, q_layout);
  const Tensor kt = io(g, kK, kE4m3, transposed(kv_layout));
  const Tensor v = io(g, kV, kE4m3, kv_layout);
  const Layout o_layout = out == Fp8Out::e4m3 && s.o_bshd ? bshd(s.batch, s.heads, s.seq_q, s.head_dim) : l.q;
  const Tensor o = io(g, kO, out == Fp8Out::bf16 ? CUDNN_DATA_BFLOAT16 : kE4m3, o_layout);
  const Tensor lse = io(g, kStats, kF32, l.rows);
  const Tensor scale = scalar(g, kScale, kF32);
  const Tensor descale_q = io(g, kDescaleQ, kF32, kScalar);
  const Tensor descale_k = io(g, kDescaleK, kF32, kScalar);
  const Tensor descale_v = io(g, kDescaleV, kF32, kScalar);
  const Tensor descale_s = io(g, kDescaleS, kF32, kScalar);
  const Tensor scale_s = io(g, kScaleS, kF32, kScalar);
  const Tensor scale_o = io(g, kScaleO, kF32, kScalar);
  const Tensor amax_s = io(g, kAmaxS, kF32, kScalar);
  const Tensor amax_o = io(g, kAmaxO, kF32, kScalar);

  // S = scale * descale_q * descale_k * Q8 K8^T (the products are exact in fp32), masked. The three
  // factors are separate nodes in cudnn-frontend's order (scale, then Q's, then K's): cuDNN matches
  // the pattern, not the arithmetic.
  Tensor S = matmul(g, q, kt, virt(g, kF32, l.scores));
  S = pointwise(g, {CUDNN_POINTWISE_MUL}, virt(g, kF32, l.scores), S, scale);
  S = pointwise(g, {CUDNN_POINTWISE_MUL}, virt(g, kF32, l.scores), S, descale_q);
  S = pointwise(g, {CUDNN_POINTWISE_MUL}, virt(g, kF32, l.scores), S, descale_k);
  if (s.causal && s.seq_q > 1) S = causal_mask(g, s, l, S);
  const Tensor P = softmax(g, l, S, lse, kF32);
  reduction(g, CUDNN_REDUCE_TENSOR_AMAX, amax_s, P);
  // P8 = e4m3(P * scale_s), the A operand of the second GEMM.
  const Tensor P8 = pointwise(g, {CUDNN_POINTWISE_MUL}, virt(g, kE4m3, l.scores), P, scale_s);
  // O = (P8 V8) * descale_s * descale_v, stored times scale_o; amax of the unscaled O.
  Tensor O = matmul(g, P8, v, virt(g, kF32, l.q));
  O = pointwise(g, {CUDNN_POINTWISE_MUL}, virt(g, kF32, l.q), O, descale_s);
  O = pointwise(g, {CUDNN_POINTWISE_MUL}, virt(g, kF32, l.q), O, descale_v);
  pointwise(g, {CUDNN_POINTWISE_MUL}, o, O, scale_o);
  reduction(g, CUDNN_REDUCE_TENSOR_AMAX, amax_o, O);
}

void build_backward(Graph& g, const Shape& s) {
  const Layouts l(s);
  const cudnnDataType_t t = io_type(s.dtype);
  const bool grouped = s.heads != s.kv_heads;
  const Tensor q = io(g, kQ, t, l.q);
  const Tensor kt = io(g, kK, t, l.kt);
  const Tensor vt = io(g, kV, t, l.kt);
  const Tensor o = io(g, kO, t, l.q);
  const Tensor lse = io(g, kStats, kF32, l.rows);
  const Tensor dout = io(g, kDout, t, l.q);
  const Tensor dq = io(g, kDq, t, l.q);
  const Tensor dk = io(g, kDk, t, l.kv);
  const Tensor dv = io(g, kDv, t, l.kv);
  const Tensor row_dot = io(g, kRowDot, kF32, l.rows);
  const Tensor dq_accum = io(g, kDqAccum, kF32, l.q);
  const Tensor scale = scalar(g, kScale, kF32);
  // The padding-mask workaround's lengths, and the GEMM sizes they override (rows x keys, etc.).
  Tensor len_q = nullptr, len_kv = nullptr;
  if (s.padding_mask) {
    const Layout lengths = {{s.batch, 1, 1, 1}, {1, 1, 1, 1}};
    len_q = io(g, kSeqLenQ, kI32, lengths);
    len_kv = io(g, kSeqLenKv, kI32, lengths);
  }
  const Overrides rows_by_keys{len_q, len_kv, nullptr}, keys_over_rows{len_kv, nullptr, len_q},
      rows_over_keys{len_q, nullptr, len_kv};

  // D = rowsum(dO * O), the softmax backward's row term (times 1: the graph's dropout-free form).
  const Tensor dout_o = pointwise(g, {CUDNN_POINTWISE_MUL}, virt(g, kF32, l.q), dout, o);
  const Tensor d_sum = reduction(g, CUDNN_REDUCE_TENSOR_ADD, virt(g, kF32, l.rows), dout_o);
  pointwise(g, {CUDNN_POINTWISE_MUL}, row_dot, d_sum, scalar(g, kOne, kF32));

  // P = exp(scale * Q K^T - LSE), masked: recomputed from the forward's statistics. With the padding
  // mask, cudnn-frontend's order: scale, padding, - LSE, causal.
  Tensor S = matmul(g, q, kt, virt(g, kF32, l.scores), rows_by_keys);
  S = pointwise(g, {CUDNN_POINTWISE_MUL}, virt(g, kF32, l.scores), S, scale);
  if (s.padding_mask) {
    S = padding_mask(g, l, S, len_q, len_kv);
    S = pointwise(g, {CUDNN_POINTWISE_SUB}, virt(g, kF32, l.scores), S, lse);
    if (s.causal) S = causal_mask(g, s, l, S);
  } else {
    if (s.causal) S = causal_mask(g, s, l, S);
    S = pointwise(g, {CUDNN_POINTWISE_SUB}, virt(g, kF32, l.scores), S, lse);
  }
  const Tensor P = pointwise(g, {CUDNN_POINTWISE_EXP}, virt(g, kF32, l.scores), S);

  // dV = P^T dO (per query head, then summed over the GQA group).
  const Tensor Pt = reshape(g, virt(g, t, l.scores_t), P);
  if (grouped)
    reduction(g, CUDNN_REDUCE_TENSOR_ADD, dv, matmul(g, Pt, dout, virt(g, t, l.q_full_kv), keys_over_rows));
  else
    matmul(g, Pt, dout, dv, keys_over_rows);

  // dS = scale * P o (dO V^T - D).
  Tensor dS = matmul(g, dout, vt, virt(g, kF32, l.scores), rows_by_keys);
  dS = pointwise(g, {CUDNN_POINTWISE_SUB}, virt(g, kF32, l.scores), dS, row_dot);
  dS = pointwise(g, {CUDNN_POINTWISE_MUL}, virt(g, kF32, l.scores), dS, P);
  dS = pointwise(g, {CUDNN_POINTWISE_MUL}, virt(g, kF32, l.scores), dS, scale);

  // dK = dS^T Q (per query head, then summed over the GQA group).
  const Tensor dSt = reshape(g, virt(g, t, l.scores_t), dS);
  if (grouped)
    reduction(g, CUDNN_REDUCE_TENSOR_ADD, dk, matmul(g, dSt, q, virt(g, t, l.q_full_kv), keys_over_rows));
  else
    matmul(g, dSt, q, dk, keys_over_rows);

  // dQ = dS K, accumulated in fp32 (the workspace), then converted.
  const Tensor k = reshape(g, virt(g, t, l.kv), kt);
  matmul(g, dS, k, dq_accum, rows_over_keys);
  pointwise(g, {CUDNN_POINTWISE_IDENTITY}, dq, dq_accum);
}

}  // namespace fb::cuda::cudnn_sdpa
