// FusedKernelsSource: writes each group's kernel as straight-line code over its nodes, one
// statement (or one unrolled loop of 8) per node, so that the compiler keeps every value in
// registers and folds the op dispatch away.
#include "exec/cuda/fused_source.h"

#include <cinttypes>
#include <cstdio>
#include <map>
#include <sstream>

namespace alpa {
namespace cuda {
namespace {

std::string DTypeCode(DType d) {
  return "static_cast<DType>(" + std::to_string(static_cast<int32_t>(d)) + ")";
}

std::string FloatLiteral(float v) {
  char text[32];
  std::snprintf(text, sizeof(text), "FloatOfBits(0x%08" PRIx32 "u)", BitsOfFloat(v));
  return text;
}

std::string RoundingCode(const OutputRounding& r) {
  return std::string("OutputRounding{") + (r.round ? "true" : "false") + ", " +
         DTypeCode(r.round_to) + "}";
}

// Statements setting `var` (of `type`) to the broadcast source index of element `element`.
std::string SourceIndexCode(const FusedNode& n, const std::string& type, const std::string& var,
                            const std::string& element) {
  const char* u = type == "unsigned" ? "u" : "ull";  // literals of the index type
  std::ostringstream o;
  o << type << " " << var << " = 0;\n";
  if (n.sizes.empty()) return o.str();
  o << "{ " << type << " f = static_cast<" << type << ">(" << element << ");\n";
  for (size_t d = n.sizes.size(); d-- > 1;) {
    o << "  { const " << type << " q = f / " << n.sizes[d] << u << "; ";
    if (n.strides[d] != 0) {
      o << var << " += (f - q * " << n.sizes[d] << u << ") * " << n.strides[d] << u << "; ";
    }
    o << "f = q; }\n";
  }
  if (n.strides[0] != 0) o << "  " << var << " += f * " << n.strides[0] << u << ";\n";
  o << "}\n";
  return o.str();
}

std::string OperandCode(const FusedNode& n, int32_t j, const std::string& suffix) {
  if (j >= n.operand_count) return "0.0f";
  return "v" + std::to_string(n.operands[j]) + suffix;
}

std::string OpValueCode(const FusedNode& n, const std::string& suffix) {
  return "RoundFloatTo(FloatOpValue(static_cast<OpKind>(" +
         std::to_string(static_cast<int32_t>(n.op)) + "), static_cast<Comparison>(" +
         std::to_string(static_cast<int32_t>(n.comparison)) + "), " +
         std::to_string(n.operand_count) + ", " + RoundingCode(n.rounding) + ", " +
         OperandCode(n, 0, suffix) + ", " + OperandCode(n, 1, suffix) + ", " +
         OperandCode(n, 2, suffix) + "), " + DTypeCode(n.storage) + ")";
}

// A kScale node: the scale kernel's double product, rounded and stored in the node's storage.
std::string ScaleValueCode(const FusedNode& n, const std::string& suffix) {
  char scale[40];
  std::snprintf(scale, sizeof(scale), "DoubleOfBits(0x%016llxull)",
                static_cast<unsigned long long>(BitsOfDouble(n.scale)));
  return "ScaledFloat(" + OperandCode(n, 0, suffix) + ", " + scale + ", " +
         RoundingCode(n.rounding) + ", " + DTypeCode(n.storage) + ")";
}

std::string InputCode(const FusedGroup& g, int32_t input) {
  return "in.p[" + std::to_string(input) + "], " +
         DTypeCode(g.input_storage[static_cast<size_t>(input)]);
}

// The index type: 32-bit where every index fits.
std::string IndexType(const FusedGroup& g) {
  return g.elements <= 0xffffffffLL ? "unsigned" : "unsigned long long";
}

std::string PackedBody(const FusedGroup& g) {
  std::ostringstream o;
  const std::string type = IndexType(g);
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const FusedNode& n = g.nodes[k];
    const std::string v = "v" + std::to_string(k);
    o << "    float " << v << "[8];\n";
    switch (n.kind) {
      case FusedNodeKind::kLoad:
        o << "    LoadEight(" << InputCode(g, n.input) << ", first, " << v << ");\n";
        break;
      case FusedNodeKind::kBroadcastLoad: {
        o << "    {\n" << SourceIndexCode(n, type, "s", "first");
        const std::string load = "RoundFloatTo(LoadFloat(" + InputCode(g, n.input) + ", s";
        if (n.strides.back() == 0) {
          o << "    const float x = " << load << "), " << DTypeCode(n.storage) << ");\n"
            << "    for (int k = 0; k < 8; ++k) " << v << "[k] = x;\n";
        } else {
          o << "    for (int k = 0; k < 8; ++k) " << v << "[k] = " << load << " + k), "
            << DTypeCode(n.storage) << ");\n";
        }
        o << "    }\n";
        break;
      }
      case FusedNodeKind::kConstant:
        o << "    for (int k = 0; k < 8; ++k) " << v << "[k] = " << FloatLiteral(n.value) << ";\n";
        break;
      case FusedNodeKind::kOp:
        o << "    for (int k = 0; k < 8; ++k) " << v << "[k] = " << OpValueCode(n, "[k]") << ";\n";
        break;
      case FusedNodeKind::kScale:
        o << "    for (int k = 0; k < 8; ++k) " << v << "[k] = " << ScaleValueCode(n, "[k]")
          << ";\n";
        break;
      case FusedNodeKind::kReduce:
        break;  // never in a packed kernel
    }
  }
  return o.str();
}

// Nodes [0, count) for element i.
std::string ScalarBody(const FusedGroup& g, size_t count) {
  std::ostringstream o;
  const std::string type = IndexType(g);
  for (size_t k = 0; k < count; ++k) {
    const FusedNode& n = g.nodes[k];
    const std::string v = "v" + std::to_string(k);
    switch (n.kind) {
      case FusedNodeKind::kLoad:
        o << "    const float " << v << " = LoadFloat(" << InputCode(g, n.input) << ", i);\n";
        break;
      case FusedNodeKind::kBroadcastLoad:
        o << "    float " << v << ";\n    {\n"
          << SourceIndexCode(n, type, "s", "i") << "    " << v << " = RoundFloatTo(LoadFloat("
          << InputCode(g, n.input) << ", s), " << DTypeCode(n.storage) << ");\n    }\n";
        break;
      case FusedNodeKind::kConstant:
        o << "    const float " << v << " = " << FloatLiteral(n.value) << ";\n";
        break;
      case FusedNodeKind::kOp:
        o << "    const float " << v << " = " << OpValueCode(n, "") << ";\n";
        break;
      case FusedNodeKind::kScale:
        o << "    const float " << v << " = " << ScaleValueCode(n, "") << ";\n";
        break;
      case FusedNodeKind::kReduce:
        break;  // ReduceKernelCode reduces
    }
  }
  return o.str();
}

// A reduction group: warp w of the grid reduces rows w, w + warps, ...; lane t its elements t,
// t + 32, ... in double, the lanes combining by shuffles (the reduce kernels' warp order).
std::string ReduceKernelCode(const FusedGroup& g) {
  const FusedNode& root = g.nodes.back();
  const std::string is_max = root.op == OpKind::kReduceMax ? "true" : "false";
  const std::string last = "v" + std::to_string(g.nodes.size() - 2);
  std::ostringstream o;
  o << "(void* out, AlpaFusedInputs in, AlpaFusedStores, long long count) {\n"
    << "  const int lane = static_cast<int>(threadIdx.x) % 32;\n"
    << "  const long long warps = static_cast<long long>(gridDim.x) * (blockDim.x / 32);\n"
    << "  for (long long o = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;"
       " o < count; o += warps) {\n"
    << "    double acc = ReduceIdentity(" << is_max << ");\n"
    << "    for (long long c = lane; c < " << g.row << "ll; c += 32) {\n"
    << "    const long long i = o * " << g.row << "ll + c;\n"
    << ScalarBody(g, g.nodes.size() - 1) << "    acc = CombineReduce(" << is_max << ", acc, "
    << "static_cast<double>(" << last << "));\n    }\n"
    << "    for (int half = 16; half > 0; half /= 2) {\n"
    << "      const double later = __shfl_down_sync(0xffffffffu, acc, half);\n"
    << "      if (lane < half) acc = CombineReduce(" << is_max << ", acc, later);\n    }\n"
    << "    if (lane == 0) StoreElement(out, " << DTypeCode(root.storage)
    << ", o, FinishValue(acc, " << RoundingCode(root.rounding) << "));\n"
    << "  }\n}\n\n";
  return o.str();
}

// The kernel's parameters and body (its name goes in front).
std::string KernelCode(const FusedGroup& g) {
  if (g.nodes.back().kind == FusedNodeKind::kReduce) return ReduceKernelCode(g);
  std::ostringstream o;
  const std::string last = "v" + std::to_string(g.nodes.size() - 1);
  const DType out = g.nodes.back().storage;
  o << "(void* out, AlpaFusedInputs in, AlpaFusedStores st, long long count) {\n"
    << "  const long long step = static_cast<long long>(gridDim.x) * blockDim.x;\n"
    << "  for (long long g = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; "
       "g < count; g += step) {\n";
  if (FusedKernelPacks(g)) {
    o << "    const long long first = g * 8;\n"
      << PackedBody(g) << "    StoreEight(out, " << DTypeCode(out) << ", first, " << last << ");\n";
    for (size_t k = 0; k < g.stores.size(); ++k) {
      const FusedNode& n = g.nodes[static_cast<size_t>(g.stores[k].node)];
      o << "    StoreEight(st.p[" << k << "], " << DTypeCode(n.storage) << ", first, v"
        << g.stores[k].node << ");\n";
    }
  } else {
    o << "    const long long i = g;\n"
      << ScalarBody(g, g.nodes.size()) << "    StoreFloat(out, " << DTypeCode(out) << ", i, "
      << last << ");\n";
    for (size_t k = 0; k < g.stores.size(); ++k) {
      const FusedNode& n = g.nodes[static_cast<size_t>(g.stores[k].node)];
      o << "    StoreFloat(st.p[" << k << "], " << DTypeCode(n.storage) << ", i, v"
        << g.stores[k].node << ");\n";
    }
  }
  o << "  }\n}\n\n";
  return o.str();
}

}  // namespace

bool FusedKernelPacks(const FusedGroup& g) {
  if (g.row > 0 || g.elements % 8 != 0) return false;
  for (const FusedNode& n : g.nodes) {
    if (n.kind != FusedNodeKind::kBroadcastLoad || n.sizes.empty()) continue;
    if (n.sizes.back() % 8 != 0 || (n.strides.back() != 0 && n.strides.back() != 1)) return false;
  }
  return true;
}

FusedSource FusedKernelsSource(const std::vector<FusedGroup>& groups) {
  // The run-time compiler has no <cstdint>: the fixed-width types its headers use.
  const std::string prelude =
      "typedef signed char int8_t;\ntypedef unsigned char uint8_t;\n"
      "typedef unsigned short uint16_t;\ntypedef int int32_t;\ntypedef unsigned uint32_t;\n"
      "typedef long long int64_t;\ntypedef unsigned long long uint64_t;\n\n"
      "#include \"exec/cuda/kernel_math.h\"\n#include \"exec/cuda/packed_elements.h\"\n\n"
      "struct AlpaFusedInputs {\n  const void* p[" +
      std::to_string(kMaxFusedGroupInputs) +
      "];\n};\n\n"
      "struct AlpaFusedStores {\n  void* p[" +
      std::to_string(kMaxFusedGroupStores) +
      "];\n};\n\n"
      "using namespace alpa;\nusing namespace alpa::cuda;\n\n"
      "extern \"C\" __global__ void " +
      std::string(kFusedKernelName);
  FusedSource source;
  std::map<std::string, size_t> unit_of_code;
  for (const FusedGroup& g : groups) {
    const std::string code = KernelCode(g);
    const auto found = unit_of_code.find(code);
    if (found != unit_of_code.end()) {
      source.kernel_of_group.push_back(found->second);
      continue;
    }
    unit_of_code.emplace(code, source.units.size());
    source.kernel_of_group.push_back(source.units.size());
    source.units.push_back(prelude + code);
  }
  return source;
}

}  // namespace cuda
}  // namespace alpa
