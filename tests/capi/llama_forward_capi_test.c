/* A Llama model written as a forward graph op by op through alpa_graph_add_ops, from C, as a user
 * without the model zoo would write it (token embedding, RMSNorm, rotary embeddings,
 * grouped-query attention, SwiGLU MLP, untied head, mean cross-entropy; one pipeline layer per
 * block), made a training step by alpa_graph_make_training with Adam: it is the zoo's llama
 * training graph of the same sizes op for op, and it plans like it (the same predicted
 * iteration time). The op sequence follows src/models/llama.cc. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alpa.h"
#include "check.h"

#define MAX_RANK 8

/* The sizes of the model; the zoo spec below has the same. */
typedef struct {
  int64_t batch, seq, hidden, heads, kv_heads, ffn, vocab, layers;
} llama_sizes;

static const llama_sizes kSizes = {8, 16, 64, 4, 2, 128, 100, 2};
static const char* const kZooSpec =
    "llama:hidden=64,layers=2,heads=4,kv_heads=2,ffn=128,seq=16,vocab=100,batch=8,dtype=bf16";

/* ---- a minimal op-by-op builder over alpa_graph_add_ops ---- */

/* The graph being built, the pipeline layer of the ops added now, and whether an op failed (then
 * every later call returns -1). */
typedef struct {
  alpa_graph* graph;
  int32_t layer;
  int failed;
} builder;

/* Appends one op; returns its id, or -1 after a failure (reported once, with the library's
 * message naming the op). */
static int32_t add_op(builder* b, int32_t kind, int32_t dtype, int32_t role,
                      const int32_t* operands, int64_t operand_count, const int64_t* shape,
                      int64_t rank, const int64_t* attrs, int64_t attr_count, double value,
                      const char* name) {
  const int64_t operand_offsets[2] = {0, operand_count};
  const int64_t shape_offsets[2] = {0, rank};
  const int64_t attr_offsets[2] = {0, attr_count};
  const char* const names[1] = {name};
  const int32_t id = (int32_t)alpa_graph_op_count(b->graph);
  alpa_error* err = NULL;
  int64_t i;
  if (b->failed) return -1;
  for (i = 0; i < operand_count; ++i) {
    if (operands[i] < 0) return -1;
  }
  if (alpa_graph_add_ops(b->graph, 1, &kind, &dtype, &role, NULL, &b->layer, operand_offsets,
                         operands, shape_offsets, shape, attr_offsets, attrs, &value, names,
                         &err) != ALPA_OK) {
    fprintf(stderr, "  op %d: %s\n", id, err != NULL ? alpa_error_message(err) : "?");
    alpa_error_free(err);
    b->failed = 1;
    CHECK(0);
    return -1;
  }
  return id;
}

/* The op's shape into out[MAX_RANK]; returns its rank. */
static int64_t shape_of(const builder* b, int32_t x, int64_t* out) {
  const int64_t rank = alpa_graph_op_shape(b->graph, x, NULL, 0);
  if (rank < 0 || rank > MAX_RANK) return 0;
  return alpa_graph_op_shape(b->graph, x, out, MAX_RANK);
}

static int32_t parameter(builder* b, int32_t role, int32_t dtype, const int64_t* shape,
                         int64_t rank, const char* name) {
  return add_op(b, ALPA_OP_PARAMETER, dtype, role, NULL, 0, shape, rank, NULL, 0, 0.0, name);
}

/* A splat of `value` with x's shape and dtype. */
static int32_t constant_like(builder* b, double value, int32_t x) {
  int64_t shape[MAX_RANK];
  const int64_t rank = shape_of(b, x, shape);
  return add_op(b, ALPA_OP_CONSTANT, alpa_graph_op_dtype(b->graph, x), ALPA_ROLE_ACTIVATION, NULL,
                0, shape, rank, NULL, 0, value, NULL);
}

static int32_t unary(builder* b, int32_t kind, int32_t x) {
  return add_op(b, kind, -1, ALPA_ROLE_ACTIVATION, &x, 1, NULL, 0, NULL, 0, 0.0, NULL);
}

static int32_t binary(builder* b, int32_t kind, int32_t x, int32_t y) {
  const int32_t operands[2] = {x, y};
  return add_op(b, kind, -1, ALPA_ROLE_ACTIVATION, operands, 2, NULL, 0, NULL, 0, 0.0, NULL);
}

/* x * c, the constant a splat like x. */
static int32_t scale(builder* b, int32_t x, double c) {
  return binary(b, ALPA_OP_MUL, x, constant_like(b, c, x));
}

static int32_t convert(builder* b, int32_t x, int32_t dtype) {
  return add_op(b, ALPA_OP_CONVERT, dtype, ALPA_ROLE_ACTIVATION, &x, 1, NULL, 0, NULL, 0, 0.0,
                NULL);
}

/* Marks x stop_gradient (alpa_graph_set_stop_gradient); returns it. */
static int32_t stop_gradient(builder* b, int32_t x) {
  alpa_error* err = NULL;
  if (x < 0 || b->failed) return -1;
  if (alpa_graph_set_stop_gradient(b->graph, x, 1, &err) != ALPA_OK) {
    fprintf(stderr, "  stop_gradient of op %d: %s\n", x,
            err != NULL ? alpa_error_message(err) : "?");
    alpa_error_free(err);
    b->failed = 1;
    CHECK(0);
    return -1;
  }
  CHECK(alpa_graph_op_stop_gradient(b->graph, x) == 1);
  return x;
}

/* reduce_sum or reduce_max of x over dims[count]. */
static int32_t reduce(builder* b, int32_t kind, int32_t x, const int64_t* dims, int64_t count) {
  return add_op(b, kind, -1, ALPA_ROLE_ACTIVATION, &x, 1, NULL, 0, dims, count, 0.0, NULL);
}

static int32_t broadcast_in_dim(builder* b, int32_t x, const int64_t* shape, int64_t rank,
                                const int64_t* dims, int64_t dim_count) {
  return add_op(b, ALPA_OP_BROADCAST_IN_DIM, -1, ALPA_ROLE_ACTIVATION, &x, 1, shape, rank, dims,
                dim_count, 0.0, NULL);
}

static int32_t reshape(builder* b, int32_t x, const int64_t* shape, int64_t rank) {
  return add_op(b, ALPA_OP_RESHAPE, -1, ALPA_ROLE_ACTIVATION, &x, 1, shape, rank, NULL, 0, 0.0,
                NULL);
}

/* x[starts .. limits) with unit strides (rank <= MAX_RANK). */
static int32_t slice(builder* b, int32_t x, const int64_t* starts, const int64_t* limits,
                     int64_t rank) {
  int64_t attrs[1 + 3 * MAX_RANK];
  int64_t i;
  attrs[0] = rank;
  for (i = 0; i < rank; ++i) {
    attrs[1 + i] = starts[i];
    attrs[1 + rank + i] = limits[i];
    attrs[1 + 2 * rank + i] = 1;
  }
  return add_op(b, ALPA_OP_SLICE, -1, ALPA_ROLE_ACTIVATION, &x, 1, NULL, 0, attrs, 1 + 3 * rank,
                0.0, NULL);
}

/* dot_general with one batch list and one contracting list per side (each of count entries). */
static int32_t dot_general(builder* b, int32_t x, int32_t y, const int64_t* lhs_batch,
                           const int64_t* rhs_batch, int64_t batch_count,
                           const int64_t* lhs_contracting, const int64_t* rhs_contracting,
                           int64_t contracting_count) {
  const int32_t operands[2] = {x, y};
  int64_t attrs[2 + 4 * MAX_RANK];
  int64_t n = 0, i;
  attrs[n++] = batch_count;
  for (i = 0; i < batch_count; ++i) attrs[n++] = lhs_batch[i];
  for (i = 0; i < batch_count; ++i) attrs[n++] = rhs_batch[i];
  attrs[n++] = contracting_count;
  for (i = 0; i < contracting_count; ++i) attrs[n++] = lhs_contracting[i];
  for (i = 0; i < contracting_count; ++i) attrs[n++] = rhs_contracting[i];
  return add_op(b, ALPA_OP_DOT_GENERAL, -1, ALPA_ROLE_ACTIVATION, operands, 2, NULL, 0, attrs, n,
                0.0, NULL);
}

/* x [..., in] . w [in, out]. */
static int32_t matmul(builder* b, int32_t x, int32_t w) {
  int64_t shape[MAX_RANK];
  const int64_t last = shape_of(b, x, shape) - 1;
  const int64_t first = 0;
  return dot_general(b, x, w, NULL, NULL, 0, &last, &first, 1);
}

/* ---- the model's pieces, op for op as the zoo's llama ---- */

/* x [..., in] . "<name>.w" [in, out] (no bias); the weight takes x's dtype. */
static int32_t dense(builder* b, int32_t x, int64_t out, const char* name) {
  int64_t shape[MAX_RANK];
  char weight_name[64];
  const int64_t rank = shape_of(b, x, shape);
  const int64_t weight_shape[2] = {shape[rank - 1], out};
  snprintf(weight_name, sizeof(weight_name), "%s.w", name);
  return matmul(b, x,
                parameter(b, ALPA_ROLE_PARAMETER, alpa_graph_op_dtype(b->graph, x), weight_shape, 2,
                          weight_name));
}

/* Broadcasts `reduced` (x without its last dim) back to x's shape. */
static int32_t unreduce_last(builder* b, int32_t reduced, const int64_t* shape, int64_t rank) {
  static const int64_t kLeading[MAX_RANK] = {0, 1, 2, 3, 4, 5, 6, 7};
  return broadcast_in_dim(b, reduced, shape, rank, kLeading, rank - 1);
}

/* x * rsqrt(mean(x^2) + 1e-5) * "<name>.g" over the last dim. */
static int32_t rms_norm(builder* b, int32_t x, const char* name) {
  int64_t shape[MAX_RANK];
  char gain_name[64];
  const int64_t rank = shape_of(b, x, shape);
  const int64_t last = rank - 1;
  int32_t mean_square, rms_inverse, normed, gain;
  mean_square = scale(b, reduce(b, ALPA_OP_REDUCE_SUM, binary(b, ALPA_OP_MUL, x, x), &last, 1),
                      1.0 / (double)shape[last]);
  rms_inverse = binary(b, ALPA_OP_ADD, mean_square, constant_like(b, 1e-5, mean_square));
  rms_inverse = unary(b, ALPA_OP_RSQRT, rms_inverse);
  normed = binary(b, ALPA_OP_MUL, x, unreduce_last(b, rms_inverse, shape, rank));
  snprintf(gain_name, sizeof(gain_name), "%s.g", name);
  gain = parameter(b, ALPA_ROLE_PARAMETER, alpa_graph_op_dtype(b->graph, x), &shape[last], 1,
                   gain_name);
  return binary(b, ALPA_OP_MUL, normed, broadcast_in_dim(b, gain, shape, rank, &last, 1));
}

/* silu(x) = x / (1 + exp(-x)). */
static int32_t silu(builder* b, int32_t x) {
  const int32_t exp_neg_x = unary(b, ALPA_OP_EXP, unary(b, ALPA_OP_NEG, x));
  const int32_t denominator = binary(b, ALPA_OP_ADD, constant_like(b, 1.0, x), exp_neg_x);
  return binary(b, ALPA_OP_DIV, x, denominator);
}

/* down(silu(gate(x)) * up(x)). */
static int32_t swiglu_mlp(builder* b, int32_t x, const llama_sizes* s, const char* prefix) {
  char name[64];
  int32_t gate, up;
  snprintf(name, sizeof(name), "%s.gate", prefix);
  gate = silu(b, dense(b, x, s->ffn, name));
  snprintf(name, sizeof(name), "%s.up", prefix);
  up = dense(b, x, s->ffn, name);
  snprintf(name, sizeof(name), "%s.down", prefix);
  return dense(b, binary(b, ALPA_OP_MUL, gate, up), s->hidden, name);
}

/* x * cos + [-x[d/2:], x[:d/2]] * sin on x [B, s, n, d]; the tables [B, s, d]. */
static int32_t apply_rotary(builder* b, int32_t x, int32_t cos_table, int32_t sin_table) {
  static const int64_t kTableDims[3] = {0, 1, 3};
  int64_t shape[MAX_RANK];
  const int64_t rank = shape_of(b, x, shape);
  const int64_t half = shape[3] / 2;
  const int64_t zero[4] = {0, 0, 0, 0};
  const int64_t middle[4] = {0, 0, 0, half};
  const int64_t first_limit[4] = {shape[0], shape[1], shape[2], half};
  int32_t halves[2], rotated, cos_x, sin_x, rotated_sin, x_cos;
  const int64_t axis = 3;
  halves[1] = slice(b, x, zero, first_limit, rank);
  halves[0] = unary(b, ALPA_OP_NEG, slice(b, x, middle, shape, rank));
  rotated = add_op(b, ALPA_OP_CONCATENATE, -1, ALPA_ROLE_ACTIVATION, halves, 2, NULL, 0, &axis, 1,
                   0.0, NULL);
  cos_x = broadcast_in_dim(b, cos_table, shape, rank, kTableDims, 3);
  sin_x = broadcast_in_dim(b, sin_table, shape, rank, kTableDims, 3);
  rotated_sin = binary(b, ALPA_OP_MUL, rotated, sin_x);
  x_cos = binary(b, ALPA_OP_MUL, x, cos_x);
  return binary(b, ALPA_OP_ADD, x_cos, rotated_sin);
}

/* k or v [B, s, kv_heads, d] -> [B, s, heads, d]: query head i reads kv head i / group. */
static int32_t repeat_kv_heads(builder* b, int32_t x, int64_t heads) {
  static const int64_t kDims[4] = {0, 1, 2, 4};
  int64_t shape[MAX_RANK];
  int64_t repeated_shape[5], out_shape[4];
  int64_t group;
  (void)shape_of(b, x, shape);
  group = heads / shape[2];
  if (group == 1) return x;
  repeated_shape[0] = shape[0];
  repeated_shape[1] = shape[1];
  repeated_shape[2] = shape[2];
  repeated_shape[3] = group;
  repeated_shape[4] = shape[3];
  out_shape[0] = shape[0];
  out_shape[1] = shape[1];
  out_shape[2] = heads;
  out_shape[3] = shape[3];
  return reshape(b, broadcast_in_dim(b, x, repeated_shape, 5, kDims, 4), out_shape, 4);
}

/* Softmax over the last dim, max-subtracted (the max marked stop_gradient, as the zoo does). */
static int32_t softmax(builder* b, int32_t x) {
  int64_t shape[MAX_RANK];
  const int64_t rank = shape_of(b, x, shape);
  const int64_t last = rank - 1;
  const int32_t max =
      unreduce_last(b, stop_gradient(b, reduce(b, ALPA_OP_REDUCE_MAX, x, &last, 1)), shape, rank);
  const int32_t e = unary(b, ALPA_OP_EXP, binary(b, ALPA_OP_SUB, x, max));
  return binary(b, ALPA_OP_DIV, e,
                unreduce_last(b, reduce(b, ALPA_OP_REDUCE_SUM, e, &last, 1), shape, rank));
}

/* Causal attention of q, k, v [B, s, heads, d] -> the context [B, s, heads * d]. */
static int32_t causal_attention(builder* b, int32_t q, int32_t k, int32_t v) {
  static const int64_t kQkBatch[2] = {0, 2}, kPvLhsBatch[2] = {0, 1}, kPvRhsBatch[2] = {0, 2};
  static const int64_t kMaskDims[2] = {2, 3}, kToContext[4] = {0, 2, 1, 3};
  const int64_t head_dim_axis = 3, key_axis = 3, value_seq_axis = 1;
  int64_t shape[MAX_RANK], score_shape[MAX_RANK];
  int64_t mask_shape[2], context_shape[3];
  int32_t scores, row, col, allowed, probs, context;
  const int64_t iota_axis[2] = {0, 1};
  (void)shape_of(b, q, shape);
  scores = dot_general(b, q, k, kQkBatch, kQkBatch, 2, &head_dim_axis, &head_dim_axis, 1);
  scores = scale(b, scores, 1.0 / sqrt((double)shape[3]));
  (void)shape_of(b, scores, score_shape);
  mask_shape[0] = shape[1];
  mask_shape[1] = shape[1];
  row = add_op(b, ALPA_OP_IOTA, ALPA_DTYPE_S32, ALPA_ROLE_ACTIVATION, NULL, 0, mask_shape, 2,
               &iota_axis[0], 1, 0.0, NULL);
  col = add_op(b, ALPA_OP_IOTA, ALPA_DTYPE_S32, ALPA_ROLE_ACTIVATION, NULL, 0, mask_shape, 2,
               &iota_axis[1], 1, 0.0, NULL);
  {
    const int32_t operands[2] = {col, row};
    const int64_t comparison = ALPA_CMP_LE;
    allowed = add_op(b, ALPA_OP_COMPARE, -1, ALPA_ROLE_ACTIVATION, operands, 2, NULL, 0,
                     &comparison, 1, 0.0, NULL);
  }
  allowed = broadcast_in_dim(b, allowed, score_shape, 4, kMaskDims, 2);
  {
    const int32_t operands[3] = {allowed, scores, constant_like(b, -1e4, scores)};
    scores = add_op(b, ALPA_OP_SELECT, -1, ALPA_ROLE_ACTIVATION, operands, 3, NULL, 0, NULL, 0, 0.0,
                    NULL);
  }
  probs = softmax(b, scores);
  context = dot_general(b, probs, v, kPvLhsBatch, kPvRhsBatch, 2, &key_axis, &value_seq_axis, 1);
  context = add_op(b, ALPA_OP_TRANSPOSE, -1, ALPA_ROLE_ACTIVATION, &context, 1, NULL, 0, kToContext,
                   4, 0.0, NULL);
  context_shape[0] = shape[0];
  context_shape[1] = shape[1];
  context_shape[2] = shape[2] * shape[3];
  return reshape(b, context, context_shape, 3);
}

/* Grouped-query attention with rotary q and k on x [B, s, h]. */
static int32_t attention(builder* b, int32_t x, const llama_sizes* s, int32_t cos_table,
                         int32_t sin_table, const char* prefix) {
  const int64_t d = s->hidden / s->heads;
  const int64_t q_shape[4] = {s->batch, s->seq, s->heads, d};
  const int64_t kv_shape[4] = {s->batch, s->seq, s->kv_heads, d};
  char name[64];
  int32_t q, k, v, k_repeated, v_repeated;
  snprintf(name, sizeof(name), "%s.q", prefix);
  q = reshape(b, dense(b, x, s->hidden, name), q_shape, 4);
  snprintf(name, sizeof(name), "%s.k", prefix);
  k = reshape(b, dense(b, x, s->kv_heads * d, name), kv_shape, 4);
  snprintf(name, sizeof(name), "%s.v", prefix);
  v = reshape(b, dense(b, x, s->kv_heads * d, name), kv_shape, 4);
  q = apply_rotary(b, q, cos_table, sin_table);
  k = apply_rotary(b, k, cos_table, sin_table);
  v_repeated = repeat_kv_heads(b, v, s->heads);
  k_repeated = repeat_kv_heads(b, k, s->heads);
  snprintf(name, sizeof(name), "%s.o", prefix);
  return dense(b, causal_attention(b, q, k_repeated, v_repeated), s->hidden, name);
}

/* The mean over tokens of the softmax cross-entropy of logits [N, V] with labels [N], as an f32
 * scalar named "loss". */
static int32_t cross_entropy_loss(builder* b, int32_t logits, int32_t labels) {
  int64_t shape[MAX_RANK];
  const int64_t rank = shape_of(b, logits, shape);
  const int64_t classes_axis = 1, batch_dim = 0;
  int32_t max, z, lse, classes, hit, picked, loss;
  max = unreduce_last(b, stop_gradient(b, reduce(b, ALPA_OP_REDUCE_MAX, logits, &classes_axis, 1)),
                      shape, rank);
  z = binary(b, ALPA_OP_SUB, logits, max);
  lse = unary(b, ALPA_OP_LOG,
              reduce(b, ALPA_OP_REDUCE_SUM, unary(b, ALPA_OP_EXP, z), &classes_axis, 1));
  classes = add_op(b, ALPA_OP_IOTA, ALPA_DTYPE_S32, ALPA_ROLE_ACTIVATION, NULL, 0, shape, rank,
                   &classes_axis, 1, 0.0, NULL);
  {
    const int32_t operands[2] = {classes, broadcast_in_dim(b, labels, shape, rank, &batch_dim, 1)};
    const int64_t comparison = ALPA_CMP_EQ;
    hit = add_op(b, ALPA_OP_COMPARE, -1, ALPA_ROLE_ACTIVATION, operands, 2, NULL, 0, &comparison, 1,
                 0.0, NULL);
  }
  picked = reduce(b, ALPA_OP_REDUCE_SUM,
                  binary(b, ALPA_OP_MUL, z, convert(b, hit, alpa_graph_op_dtype(b->graph, z))),
                  &classes_axis, 1);
  loss = binary(b, ALPA_OP_SUB, lse, picked);
  /* the mean in f32 (f64 stays f64): a sum over many tokens overflows f16 / bf16 */
  if (alpa_graph_op_dtype(b->graph, loss) != ALPA_DTYPE_F32 &&
      alpa_graph_op_dtype(b->graph, loss) != ALPA_DTYPE_F64) {
    loss = convert(b, loss, ALPA_DTYPE_F32);
  }
  loss = reduce(b, ALPA_OP_REDUCE_SUM, loss, &batch_dim, 1);
  {
    const int32_t operands[2] = {loss, constant_like(b, 1.0 / (double)shape[0], loss)};
    return add_op(b, ALPA_OP_MUL, -1, ALPA_ROLE_ACTIVATION, operands, 2, NULL, 0, NULL, 0, 0.0,
                  "loss");
  }
}

/* ---- the model by phase: embedding (layer 0), blocks (1..L), head and loss (L + 1) ---- */

typedef struct {
  int32_t x;      /* the hidden states [B, s, h] */
  int32_t labels; /* [B, s] s32 */
  int32_t cos_table, sin_table;
} llama_inputs;

static llama_inputs embedding(builder* b, const llama_sizes* s, int32_t dtype) {
  const int64_t tokens_shape[2] = {s->batch, s->seq};
  const int64_t table_shape[2] = {s->vocab, s->hidden};
  const int64_t rope_shape[3] = {s->batch, s->seq, s->hidden / s->heads};
  llama_inputs in;
  int32_t tokens, wte;
  b->layer = 0;
  tokens = parameter(b, ALPA_ROLE_INPUT, ALPA_DTYPE_S32, tokens_shape, 2, "tokens");
  in.labels = parameter(b, ALPA_ROLE_INPUT, ALPA_DTYPE_S32, tokens_shape, 2, "labels");
  wte = parameter(b, ALPA_ROLE_PARAMETER, dtype, table_shape, 2, "wte");
  {
    const int32_t operands[2] = {wte, tokens};
    const int64_t axis = 0;
    in.x = add_op(b, ALPA_OP_GATHER, -1, ALPA_ROLE_ACTIVATION, operands, 2, NULL, 0, &axis, 1, 0.0,
                  NULL);
  }
  in.cos_table = parameter(b, ALPA_ROLE_INPUT, dtype, rope_shape, 3, "rope.cos");
  in.sin_table = parameter(b, ALPA_ROLE_INPUT, dtype, rope_shape, 3, "rope.sin");
  return in;
}

/* x += attn(rms(x)); x += mlp(rms(x)), as pipeline layer index + 1. */
static int32_t decoder_block(builder* b, const llama_sizes* s, const llama_inputs* in, int32_t x,
                             int32_t index) {
  char prefix[32], name[48];
  b->layer = index + 1;
  snprintf(name, sizeof(name), "h%d.attn_norm", (int)index);
  snprintf(prefix, sizeof(prefix), "h%d.attn", (int)index);
  x = binary(b, ALPA_OP_ADD, x,
             attention(b, rms_norm(b, x, name), s, in->cos_table, in->sin_table, prefix));
  snprintf(name, sizeof(name), "h%d.mlp_norm", (int)index);
  snprintf(prefix, sizeof(prefix), "h%d.mlp", (int)index);
  return binary(b, ALPA_OP_ADD, x, swiglu_mlp(b, rms_norm(b, x, name), s, prefix));
}

/* The final norm, the untied head "lm_head" and the loss, as the last pipeline layer. */
static int32_t head_and_loss(builder* b, const llama_sizes* s, const llama_inputs* in, int32_t x) {
  const int64_t tokens = s->batch * s->seq;
  const int64_t logits_shape[2] = {tokens, s->vocab};
  int32_t logits, flat_labels;
  b->layer = (int32_t)s->layers + 1;
  logits = dense(b, rms_norm(b, x, "norm_f"), s->vocab, "lm_head");
  flat_labels = reshape(b, in->labels, &tokens, 1);
  return cross_entropy_loss(b, reshape(b, logits, logits_shape, 2), flat_labels);
}

/* The whole forward graph, finalized with the loss as its output; NULL after an error. */
static alpa_graph* llama_forward(const llama_sizes* s, int32_t dtype) {
  builder b = {NULL, 0, 0};
  alpa_error* err = NULL;
  llama_inputs in;
  int32_t x, loss;
  int64_t i;
  if (alpa_graph_create(&b.graph, &err) != ALPA_OK) return NULL;
  in = embedding(&b, s, dtype);
  x = in.x;
  for (i = 0; i < s->layers; ++i) x = decoder_block(&b, s, &in, x, (int32_t)i);
  loss = head_and_loss(&b, s, &in, x);
  if (b.failed || alpa_graph_set_outputs(b.graph, 1, &loss, &err) != ALPA_OK ||
      alpa_graph_finalize(b.graph, &err) != ALPA_OK) {
    if (err != NULL) fprintf(stderr, "  error: %s\n", alpa_error_message(err));
    alpa_error_free(err);
    alpa_graph_destroy(b.graph);
    CHECK(0);
    return NULL;
  }
  return b.graph;
}

/* ---- the checks ---- */

/* The graph's JSON, or NULL. Caller frees with alpa_buffer_free. */
static alpa_buffer* graph_json(const alpa_graph* g) {
  alpa_buffer* json = NULL;
  alpa_error* err = NULL;
  if (alpa_graph_to_json(&json, g, &err) != ALPA_OK) {
    fprintf(stderr, "  error: %s\n", alpa_error_message(err));
    alpa_error_free(err);
    return NULL;
  }
  return json;
}

static int same_json(const alpa_graph* x, const alpa_graph* y) {
  alpa_buffer* a = graph_json(x);
  alpa_buffer* b = graph_json(y);
  const int same = a != NULL && b != NULL && alpa_buffer_size(a) == alpa_buffer_size(b) &&
                   memcmp(alpa_buffer_data(a), alpa_buffer_data(b), alpa_buffer_size(a)) == 0;
  alpa_buffer_free(a);
  alpa_buffer_free(b);
  return same;
}

/* The predicted iteration time of `graph` (the global batch in dim 0 of its inputs, split into
 * microbatches as a zoo model's) or, for graph NULL, of the zoo spec; NaN after an error. */
static double plan_seconds(const alpa_graph* graph, const char* spec) {
  alpa_cluster* cluster = NULL;
  alpa_plan_options* options = NULL;
  alpa_plan* plan = NULL;
  alpa_error* err = NULL;
  double seconds = NAN;
  if (alpa_cluster_create_preset(&cluster, "p3.16xlarge:hosts=2,devices_per_host=2", 0, &err) ==
          ALPA_OK &&
      alpa_plan_options_create(&options, &err) == ALPA_OK &&
      alpa_plan_options_set_by_name(options, "threads", "1", &err) == ALPA_OK &&
      alpa_plan_options_set_int(options, ALPA_PLAN_OPT_GRAPH_BATCH_DIM, 0, &err) == ALPA_OK &&
      (graph != NULL ? alpa_graph_plan(&plan, graph, cluster, options, &err)
                     : alpa_model_plan(&plan, spec, cluster, options, &err)) == ALPA_OK) {
    seconds = alpa_plan_iteration_seconds(plan);
  }
  if (err != NULL) fprintf(stderr, "  error: %s\n", alpa_error_message(err));
  alpa_error_free(err);
  alpa_plan_destroy(plan);
  alpa_plan_options_destroy(options);
  alpa_cluster_destroy(cluster);
  return seconds;
}

static void test_forward_equals_zoo(const alpa_graph* forward) {
  alpa_graph* zoo_forward = NULL;
  char spec[256];
  alpa_error* err = NULL;
  snprintf(spec, sizeof(spec), "%s,training=0", kZooSpec);
  CHECK(alpa_model_build_graph(&zoo_forward, spec, &err) == ALPA_OK);
  alpa_error_free(err);
  CHECK(same_json(forward, zoo_forward));
  alpa_graph_destroy(zoo_forward);
}

static void test_training_plans_like_zoo(const alpa_graph* forward) {
  alpa_graph* train = NULL;
  alpa_graph* zoo = NULL;
  alpa_error* err = NULL;
  double built_seconds, zoo_seconds;
  CHECK(alpa_graph_make_training(&train, forward, "adam", &err) == ALPA_OK);
  if (err != NULL) fprintf(stderr, "  error: %s\n", alpa_error_message(err));
  alpa_error_free(err);
  err = NULL;
  CHECK(alpa_model_build_graph(&zoo, kZooSpec, &err) == ALPA_OK);
  alpa_error_free(err);
  if (train == NULL || zoo == NULL) goto done;
  /* op for op the zoo's training graph: backward, Adam update, master weights, layers */
  CHECK(alpa_graph_op_count(train) == alpa_graph_op_count(zoo));
  CHECK(same_json(train, zoo));
  built_seconds = plan_seconds(train, NULL);
  zoo_seconds = plan_seconds(NULL, kZooSpec);
  printf("iteration seconds: C-built forward + make_training %.9g, zoo %.9g\n", built_seconds,
         zoo_seconds);
  CHECK(isfinite(built_seconds) && built_seconds > 0);
  CHECK(fabs(built_seconds - zoo_seconds) <= 0.01 * zoo_seconds);
  {
    /* the training step is final: no second backward pass on top of it */
    alpa_graph* twice = NULL;
    CHECK(alpa_graph_make_training(&twice, train, "adam", &err) == ALPA_ERR_INVALID_ARGUMENT);
    CHECK(error_mentions(err, "already has a backward phase"));
    CHECK(twice == NULL);
    err = NULL;
  }
done:
  alpa_graph_destroy(zoo);
  alpa_graph_destroy(train);
}

int main(void) {
  alpa_graph* forward = llama_forward(&kSizes, ALPA_DTYPE_BF16);
  CHECK(forward != NULL);
  if (forward != NULL) {
    test_forward_equals_zoo(forward);
    test_training_plans_like_zoo(forward);
  }
  alpa_graph_destroy(forward);
  return check_summary();
}
