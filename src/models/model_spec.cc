// Presets (REFERENCE §6), family keys with defaults, and spec parsing.
#include <algorithm>
#include <sstream>

#include "models/layers.h"
#include "models/model_zoo.h"

namespace alpa {
namespace {

enum class KeyType { kPositiveInt, kNonNegativeInt, kPositiveFloat, kBool, kDType, kChoice, kList };

struct KeyInfo {
  const char* name;
  const char* default_value;  // "" for keys whose default depends on others (master_weights)
  KeyType type;
  const char* choices;  // kChoice: "sgd|momentum|adam"
};

struct FamilyInfo {
  const char* name;
  const char* summary;
  std::vector<KeyInfo> keys;  // family keys; the common keys are appended
};

std::vector<KeyInfo> CommonKeys(const char* dtype) {
  return {{"dtype", dtype, KeyType::kDType, nullptr},
          {"optimizer", "adam", KeyType::kChoice, "sgd|momentum|adam"},
          {"lr", "0.001", KeyType::kPositiveFloat, nullptr},
          {"adam_eps", "1e-08", KeyType::kPositiveFloat, nullptr},
          // Default: 1 when dtype is f16/bf16 (f32 master copies), else 0.
          {"master_weights", "", KeyType::kBool, nullptr},
          {"training", "1", KeyType::kBool, nullptr}};
}

const std::vector<FamilyInfo>& Families() {
  static const std::vector<FamilyInfo> kFamilies = [] {
    std::vector<FamilyInfo> families = {
        {"mlp",
         "dense (+bias) + relu layers, mean squared error (loss=mse) or softmax cross-entropy "
         "over `hidden` classes (loss=ce)",
         {{"layers", "6", KeyType::kPositiveInt, nullptr},
          {"hidden", "32", KeyType::kPositiveInt, nullptr},
          {"batch", "256", KeyType::kPositiveInt, nullptr},
          {"bias", "1", KeyType::kBool, nullptr},
          {"loss", "mse", KeyType::kChoice, "mse|ce"}}},
        {"gpt",
         "pre-LN causal transformer LM, learned token + position embeddings, LM head tied to "
         "the token embedding; heads=0 means hidden/64; embed=0: the blocks alone (no "
         "embeddings, final LN or LM head) on hidden states x [batch, seq, hidden], mean "
         "squared error against y",
         {{"hidden", "1024", KeyType::kPositiveInt, nullptr},
          {"layers", "24", KeyType::kPositiveInt, nullptr},
          {"heads", "16", KeyType::kNonNegativeInt, nullptr},
          {"seq", "1024", KeyType::kPositiveInt, nullptr},
          {"vocab", "51200", KeyType::kPositiveInt, nullptr},
          {"batch", "1024", KeyType::kPositiveInt, nullptr},
          {"embed", "1", KeyType::kBool, nullptr}}},
        {"bert",
         "post-LN bidirectional transformer (as Alpa's / HF BERT), tied MLM head with bias, "
         "loss on every token (no masking); heads=0 means hidden/64; embed=0: the blocks alone "
         "(no embeddings or MLM head) on hidden states x [batch, seq, hidden], mean squared "
         "error against y (Alpa's BERT layer test)",
         {{"hidden", "768", KeyType::kPositiveInt, nullptr},
          {"layers", "12", KeyType::kPositiveInt, nullptr},
          {"heads", "0", KeyType::kNonNegativeInt, nullptr},
          {"seq", "512", KeyType::kPositiveInt, nullptr},
          {"vocab", "30522", KeyType::kPositiveInt, nullptr},
          {"batch", "256", KeyType::kPositiveInt, nullptr},
          {"embed", "1", KeyType::kBool, nullptr}}},
        {"moe",
         "Alpa's MoE LM: post-LN bidirectional transformer, GShard top-2 MoE (experts "
         "[E, h, mlp_ratio*h], relu) in every moe_every-th layer starting with the first, "
         "dense gelu MLP elsewhere; tokens routed in groups of `group`; embed=0: the blocks "
         "alone (no embeddings or LM head) on hidden states x [batch, seq, hidden], mean "
         "squared error against y (Alpa's MoE layer test)",
         {{"hidden", "768", KeyType::kPositiveInt, nullptr},
          {"layers", "8", KeyType::kPositiveInt, nullptr},
          {"experts", "8", KeyType::kPositiveInt, nullptr},
          {"heads", "16", KeyType::kNonNegativeInt, nullptr},
          {"seq", "1024", KeyType::kPositiveInt, nullptr},
          {"vocab", "32000", KeyType::kPositiveInt, nullptr},
          {"batch", "1024", KeyType::kPositiveInt, nullptr},
          {"group", "2048", KeyType::kPositiveInt, nullptr},
          {"capacity_factor", "1", KeyType::kPositiveFloat, nullptr},
          {"moe_every", "2", KeyType::kPositiveInt, nullptr},
          {"mlp_ratio", "8", KeyType::kPositiveInt, nullptr},
          {"embed", "1", KeyType::kBool, nullptr}}},
        {"wresnet",
         "Wide-ResNet (Alpa's): bottleneck blocks, stage i has filters channels*2^i, the 3x3 "
         "conv widened by `width`, output 4*filters; batch-norm with batch statistics",
         {{"layers", "50", KeyType::kChoice, "50|101"},
          {"channels", "160", KeyType::kPositiveInt, nullptr},
          {"width", "2", KeyType::kPositiveInt, nullptr},
          {"image", "224", KeyType::kPositiveInt, nullptr},
          {"classes", "1000", KeyType::kPositiveInt, nullptr},
          {"batch", "1536", KeyType::kPositiveInt, nullptr},
          // Blocks per stage overriding `layers`, dash-separated ("1-1-1-1"); "" = from layers.
          {"stages", "", KeyType::kList, nullptr}}},
        {"llama",
         "Llama 2 / 3 decoder: token embedding (no position table), pre-norm blocks with "
         "RMSNorm, rotary embeddings on q and k, grouped-query causal attention (kv_heads "
         "key/value heads, each shared by heads/kv_heads query heads; kv_heads=0 means heads), "
         "SwiGLU MLP of width ffn, no biases; final RMSNorm, untied LM head; the rotary cos/sin "
         "tables are inputs rope.cos and rope.sin [batch, seq, hidden/heads]; embed=0: the "
         "blocks alone on hidden states x [batch, seq, hidden], mean squared error against y",
         {{"hidden", "4096", KeyType::kPositiveInt, nullptr},
          {"layers", "32", KeyType::kPositiveInt, nullptr},
          {"heads", "32", KeyType::kPositiveInt, nullptr},
          {"kv_heads", "0", KeyType::kNonNegativeInt, nullptr},
          {"ffn", "11008", KeyType::kPositiveInt, nullptr},
          {"seq", "4096", KeyType::kPositiveInt, nullptr},
          {"vocab", "32000", KeyType::kPositiveInt, nullptr},
          {"batch", "1024", KeyType::kPositiveInt, nullptr},
          {"embed", "1", KeyType::kBool, nullptr}}},
    };
    for (FamilyInfo& fam : families) {
      const std::string name = fam.name;
      const bool f16 = name == "gpt" || name == "bert" || name == "moe";
      // Llama 2 and 3 were trained in bf16.
      const char* dtype = name == "llama" ? "bf16" : f16 ? "f16" : "f32";
      for (const KeyInfo& k : CommonKeys(dtype)) fam.keys.push_back(k);
    }
    return families;
  }();
  return kFamilies;
}

const FamilyInfo* FindFamily(const std::string& name) {
  for (const FamilyInfo& f : Families()) {
    if (name == f.name) return &f;
  }
  return nullptr;
}

const KeyInfo* FindKey(const FamilyInfo& family, const std::string& key) {
  for (const KeyInfo& k : family.keys) {
    if (key == k.name) return &k;
  }
  return nullptr;
}

std::string ValidKeys(const FamilyInfo& family) {
  std::vector<std::string> names;
  for (const KeyInfo& k : family.keys) names.emplace_back(k.name);
  std::sort(names.begin(), names.end());
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// Checks one value against its key's type; "" when fine, else the complaint.
std::string CheckValue(const KeyInfo& key, const std::string& value) {
  ModelSpec probe;
  probe.keys[key.name] = value;
  models::SpecReader r(probe);
  switch (key.type) {
    case KeyType::kPositiveInt:
      r.PositiveInt(key.name);
      break;
    case KeyType::kNonNegativeInt:
      r.NonNegativeInt(key.name);
      break;
    case KeyType::kPositiveFloat:
      r.PositiveFloat(key.name);
      break;
    case KeyType::kBool:
      r.Bool(key.name);
      break;
    case KeyType::kDType:
      r.Dtype(key.name);
      break;
    case KeyType::kChoice: {
      std::string choices = key.choices;
      std::stringstream ss(choices);
      std::string c;
      while (std::getline(ss, c, '|')) {
        if (c == value) return "";
      }
      std::replace(choices.begin(), choices.end(), '|', ' ');
      return std::string(key.name) + " must be one of: " + choices + " (got \"" + value + "\")";
    }
    case KeyType::kList: {
      std::stringstream ss(value);
      std::string item;
      while (std::getline(ss, item, '-')) {
        probe.keys[key.name] = item;
        models::SpecReader item_reader(probe);
        item_reader.PositiveInt(key.name);
        if (!item_reader.ok()) {
          return std::string(key.name) + " must be positive integers joined by '-' (got \"" +
                 value + "\")";
        }
      }
      return "";
    }
  }
  if (r.ok()) return "";
  // Strip the probe's label prefix: the caller adds the real one.
  const std::string& m = r.status().message();
  const std::string prefix = models::SpecLabel(probe);
  return m.compare(0, prefix.size(), prefix) == 0 ? m.substr(prefix.size()) : m;
}

ModelPreset Preset(const std::string& name, const std::string& spec, double nominal, int32_t gpus,
                   const std::string& description) {
  ModelPreset p;
  p.name = name;
  p.family = spec.substr(0, spec.find(':'));
  p.spec = spec;
  p.nominal_params = static_cast<int64_t>(nominal);
  p.benchmark_gpus = gpus;
  p.description = description;
  return p;
}

}  // namespace

const std::vector<ModelPreset>& ModelPresets() {
  static const std::vector<ModelPreset> kPresets = [] {
    std::vector<ModelPreset> presets;
    const char* gpt = "GPT-3 style LM (Alpa benchmark), ";
    presets.push_back(Preset("gpt-350m", "gpt:hidden=1024,layers=24,heads=16", 350e6, 1, gpt));
    presets.push_back(Preset("gpt-760m", "gpt:hidden=1536,layers=24,heads=16", 760e6, 2, gpt));
    presets.push_back(Preset("gpt-1.3b", "gpt:hidden=2048,layers=24,heads=32", 1.3e9, 4, gpt));
    presets.push_back(Preset("gpt-2.6b", "gpt:hidden=2560,layers=32,heads=32", 2.6e9, 8, gpt));
    presets.push_back(Preset("gpt-6.7b", "gpt:hidden=4096,layers=32,heads=32", 6.7e9, 16, gpt));
    presets.push_back(Preset("gpt-15b", "gpt:hidden=5120,layers=48,heads=40", 15e9, 32, gpt));
    presets.push_back(Preset("gpt-39b", "gpt:hidden=8192,layers=48,heads=64", 39e9, 64, gpt));
    presets.push_back(Preset("bert-base", "bert:hidden=768,layers=12,heads=12", 110e6, 0,
                             "BERT-base (post-LN), seq 512"));
    presets.push_back(Preset("bert-large", "bert:hidden=1024,layers=24,heads=16", 340e6, 0,
                             "BERT-large (post-LN), seq 512"));
    const char* moe = "GShard MoE LM (Alpa benchmark), ";
    presets.push_back(Preset("moe-380m", "moe:hidden=768,layers=8,experts=8", 380e6, 1, moe));
    presets.push_back(Preset("moe-690m", "moe:hidden=768,layers=8,experts=16", 690e6, 2, moe));
    presets.push_back(Preset("moe-1.3b", "moe:hidden=768,layers=16,experts=16", 1.3e9, 4, moe));
    presets.push_back(Preset("moe-2.4b", "moe:hidden=1024,layers=16,experts=16", 2.4e9, 8, moe));
    presets.push_back(Preset("moe-10b", "moe:hidden=1536,layers=16,experts=32", 10e9, 16, moe));
    presets.push_back(Preset("moe-27b", "moe:hidden=2048,layers=16,experts=48", 27e9, 32, moe));
    presets.push_back(Preset("moe-70b", "moe:hidden=2048,layers=32,experts=64", 70e9, 64, moe));
    const char* wrn = "Wide-ResNet (Alpa benchmark), 224 px, ";
    presets.push_back(
        Preset("wresnet-250m", "wresnet:layers=50,channels=160,width=2", 250e6, 1, wrn));
    presets.push_back(
        Preset("wresnet-500m", "wresnet:layers=50,channels=224,width=2", 500e6, 2, wrn));
    presets.push_back(Preset("wresnet-1b", "wresnet:layers=50,channels=320,width=2", 1e9, 4, wrn));
    presets.push_back(Preset("wresnet-2b", "wresnet:layers=50,channels=448,width=2", 2e9, 8, wrn));
    presets.push_back(Preset("wresnet-4b", "wresnet:layers=50,channels=640,width=2", 4e9, 16, wrn));
    presets.push_back(
        Preset("wresnet-6.8b", "wresnet:layers=50,channels=320,width=16", 6.8e9, 32, wrn));
    presets.push_back(
        Preset("wresnet-13b", "wresnet:layers=101,channels=320,width=16", 13e9, 64, wrn));
    // Llama 2 (Touvron et al. 2023, table 1 and the released configs) and Llama 3 (Meta's
    // model card and configs): published sizes 6.74B, 13.02B, 68.98B, 8.03B and 70.55B; the
    // sequence lengths they were trained with (4096 and 8192) at about 4M tokens per batch.
    const char* llama2 = "Llama 2 (Touvron et al. 2023), seq 4096";
    const char* llama3 = "Llama 3 (Meta 2024), seq 8192, 128K vocab";
    presets.push_back(Preset(
        "llama2-7b", "llama:hidden=4096,layers=32,heads=32,kv_heads=32,ffn=11008,vocab=32000",
        6.74e9, 0, llama2));
    presets.push_back(Preset(
        "llama2-13b", "llama:hidden=5120,layers=40,heads=40,kv_heads=40,ffn=13824,vocab=32000",
        13.02e9, 0, llama2));
    presets.push_back(Preset(
        "llama2-70b", "llama:hidden=8192,layers=80,heads=64,kv_heads=8,ffn=28672,vocab=32000",
        68.98e9, 0, std::string(llama2) + ", grouped-query attention"));
    presets.push_back(Preset("llama3-8b",
                             "llama:hidden=4096,layers=32,heads=32,kv_heads=8,ffn=14336,"
                             "vocab=128256,seq=8192,batch=512",
                             8.03e9, 0, llama3));
    presets.push_back(Preset("llama3-70b",
                             "llama:hidden=8192,layers=80,heads=64,kv_heads=8,ffn=28672,"
                             "vocab=128256,seq=8192,batch=512",
                             70.55e9, 0, llama3));
    for (ModelPreset& m : presets) {
      if (m.benchmark_gpus > 0) {
        m.description += std::to_string(m.benchmark_gpus) + " GPU";
        if (m.benchmark_gpus > 1) m.description += "s";
        m.description += " in the paper";
      }
    }
    return presets;
  }();
  return kPresets;
}

std::vector<std::string> ModelFamilyHelp() {
  std::vector<std::string> lines;
  for (const FamilyInfo& f : Families()) {
    std::string line = std::string(f.name) + ": " + f.summary + ". Keys:";
    for (const KeyInfo& k : f.keys) {
      line += std::string(" ") + k.name + "=";
      if (k.type == KeyType::kChoice) {
        line += std::string(k.default_value) + " (" + k.choices + ")";
      } else if (std::string(k.name) == "master_weights") {
        line += "auto";
      } else if (std::string(k.name) == "stages") {
        line += "\"\" (e.g. 3-4-6-3)";
      } else {
        line += k.default_value;
      }
    }
    lines.push_back(std::move(line));
  }
  return lines;
}

namespace {
// Applies "k=v,k=v" to `spec`, validating keys against `family`.
Status ApplyKeys(const FamilyInfo& family, const std::string& text, const std::string& label,
                 ModelSpec& spec) {
  if (text.empty()) return Status::Ok();
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      return InvalidArgument(label + "expected key=value, got \"" + item + "\"");
    }
    std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    const KeyInfo* info = FindKey(family, key);
    if (info == nullptr) {
      return InvalidArgument(label + "unknown key \"" + key + "\" for family " + family.name +
                             " (valid keys: " + ValidKeys(family) + ")");
    }
    std::string complaint = CheckValue(*info, value);
    if (!complaint.empty()) return InvalidArgument(label + complaint);
    spec.keys[key] = value;
  }
  return Status::Ok();
}
}  // namespace

Result<ModelSpec> ParseModelSpec(const std::string& text) {
  const std::string label = "model spec \"" + text + "\": ";
  const size_t colon = text.find(':');
  const std::string head = text.substr(0, colon);
  const std::string tail = colon == std::string::npos ? "" : text.substr(colon + 1);
  if (colon != std::string::npos && tail.empty()) {
    return InvalidArgument(label + "nothing after ':' (expected key=value,...)");
  }
  ModelSpec spec;
  const ModelPreset* preset = nullptr;
  for (const ModelPreset& p : ModelPresets()) {
    if (p.name == head) preset = &p;
  }
  const FamilyInfo* family = FindFamily(preset != nullptr ? preset->family : head);
  if (family == nullptr) {
    return InvalidArgument("unknown model \"" + head + "\" (try `alpa models`)");
  }
  spec.family = family->name;
  for (const KeyInfo& k : family->keys) spec.keys[k.name] = k.default_value;
  if (preset != nullptr) {
    spec.preset = preset->name;
    const std::string preset_keys = preset->spec.substr(preset->spec.find(':') + 1);
    ALPA_RETURN_IF_ERROR(ApplyKeys(*family, preset_keys, label, spec));
  }
  ALPA_RETURN_IF_ERROR(ApplyKeys(*family, tail, label, spec));
  if (spec.keys["master_weights"].empty()) {
    const std::string& d = spec.keys["dtype"];
    spec.keys["master_weights"] = (d == "f16" || d == "bf16") ? "1" : "0";
  }
  return spec;
}

}  // namespace alpa
