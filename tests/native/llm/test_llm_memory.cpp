// LLM inference memory. Golden numbers and their sources:
//  - KV cache per token in 16 bit: Llama 3.1 8B ~128 KiB, Qwen3 32B 256 KiB, Llama 3.x 70B 320 KiB
//    (issue #2; independently 2 x layers x kv_heads x head_dim x 2 bytes from each config.json).
//  - Weights of 8B/32B/70B at 16/8/4 bit ~16/8/5, 66/33/20, 141/71/43 GB (issue #2; the 4-bit
//    figures match Ollama's Q4_K_M downloads: llama3.1:8b 4.9 GB, qwen3:32b 20 GB, llama3.1:70b 43 GB).
//  - 32 000 tokens of Qwen3 32B ~8 GB of KV cache (issue #2).
//  - vLLM's own measurement: 2.89 GiB of KV cache holds 23648 tokens of Llama 3.1 8B
//    (shared/facts/oom-examples.json oom-033).
#include <cmath>
#include <string>

#include "catch.hpp"
#include "support/input_errors.hpp"
#include "cli_runner.hpp"
#include "core/api/api.hpp"
#include "core/base/error.hpp"

using headroom::InputError;
using nlohmann::json;

namespace {

json llm(json request) { return headroom::api::llm(request); }

double gb(const json& v) { return v.get<double>() / 1e9; }

std::string field_of(const json& request) {
  return support::input_error_field([&] { headroom::api::llm(request); });
}

}  // namespace

TEST_CASE("llm: KV cache per token matches the published figures") {
  CHECK(llm({{"model", "llama-3.1-8b"}, {"context", 1}})["kv_bytes_per_token"].get<double>() == 128 * 1024);
  CHECK(llm({{"model", "qwen3-32b"}, {"context", 1}})["kv_bytes_per_token"].get<double>() == 256 * 1024);
  CHECK(llm({{"model", "llama-3.3-70b"}, {"context", 1}})["kv_bytes_per_token"].get<double>() == 320 * 1024);
  // Independent arithmetic from Qwen2.5-7B's config.json: 2 x 28 layers x 4 KV heads x 128 x 2 bytes.
  CHECK(llm({{"model", "Qwen/Qwen2.5-7B-Instruct"}, {"context", 1}})["kv_bytes_per_token"].get<double>() ==
        2 * 28 * 4 * 128 * 2);
}

TEST_CASE("llm: vLLM's measured KV capacity agrees (oom-033)") {
  // 2.89 GiB of cache for 23648 tokens = 131,219 bytes per token; ours 131,072 (within 0.2%).
  double measured = 2.89 * 1073741824.0 / 23648.0;
  double ours = llm({{"model", "llama-3.1-8b"}, {"context", 1}})["kv_bytes_per_token"].get<double>();
  CHECK(std::abs(ours - measured) / measured < 0.01);
}

TEST_CASE("llm: 32 000 tokens of Qwen3 32B is about 8 GB of KV cache") {
  json r = llm({{"model", "qwen3-32b"}, {"context", 32000}});
  CHECK(gb(r["kv_cache_bytes"]) == Approx(8.0).epsilon(0.06));  // 8.39 GB
  json fp8 = llm({{"model", "qwen3-32b"}, {"context", 32000}, {"kv_precision", "fp8"}});
  CHECK(fp8["kv_cache_bytes"].get<double>() == Approx(r["kv_cache_bytes"].get<double>() / 2));
  json q8 = llm({{"model", "qwen3-32b"}, {"context", 32000}, {"kv_precision", "q8_0"}});
  CHECK(q8["kv_cache_bytes"].get<double>() == Approx(fp8["kv_cache_bytes"].get<double>() * 34 / 32));  // ggml block_q8_0
  json batch = llm({{"model", "qwen3-32b"}, {"context", 32000}, {"batch", 4}});
  CHECK(batch["kv_cache_bytes"].get<double>() == Approx(4 * r["kv_cache_bytes"].get<double>()));
}

TEST_CASE("llm: weights of 8B/32B/70B at 16/8/4 bit") {
  struct Row {
    const char* model;
    double g16, g8, g4;
  };
  const Row rows[] = {{"llama-3.1-8b", 16, 8, 5}, {"qwen3-32b", 66, 33, 20}, {"llama-3.1-70b", 141, 71, 43}};
  for (const auto& row : rows) {
    INFO(row.model);
    CHECK(gb(llm({{"model", row.model}, {"context", 1}, {"precision", "bf16"}})["weights_bytes"]) ==
          Approx(row.g16).epsilon(0.03));
    CHECK(gb(llm({{"model", row.model}, {"context", 1}, {"precision", "fp8"}})["weights_bytes"]) ==
          Approx(row.g8).epsilon(0.03));
    CHECK(gb(llm({{"model", row.model}, {"context", 1}, {"precision", "gguf-q4_k_m"}})["weights_bytes"]) ==
          Approx(row.g4).epsilon(0.05));
  }
}

TEST_CASE("llm: hand-described models work like catalog ones") {
  json custom = llm({{"params", 8.03}, {"layers", 32}, {"kv_heads", 8}, {"head_dim", 128}, {"context", 4096}});
  json cat = llm({{"model", "llama-3.1-8b"}, {"context", 4096}});
  CHECK(custom["kv_cache_bytes"] == cat["kv_cache_bytes"]);
  CHECK(custom["model"]["name"] == "custom");
}

TEST_CASE("llm: verdict against a card") {
  json fits = llm({{"model", "llama-3.1-8b"}, {"context", 8192}, {"gpu", "4090"}});
  CHECK(fits["verdict"] == "fits");
  CHECK(fits["gpu"] == "RTX 4090 24GB");
  json no = llm({{"model", "llama-3.1-70b"}, {"context", 8192}, {"gpu", "RTX 4090"}});
  CHECK(no["verdict"] == "does not fit");
  CHECK(no["max_context_that_fits"] == 0);
  // The longest context that fits, then fills the card: one more token would not.
  json vram = llm({{"model", "llama-3.1-8b"}, {"context", 1}, {"vram_bytes", 24ull << 30}});
  std::int64_t longest = vram["max_context_that_fits"];
  CHECK(llm({{"model", "llama-3.1-8b"}, {"context", longest}, {"vram_bytes", 24ull << 30}})["verdict"] == "fits");
  CHECK(llm({{"model", "llama-3.1-8b"}, {"context", longest + 1}, {"vram_bytes", 24ull << 30}})["verdict"] ==
        "does not fit");
}

TEST_CASE("llm: bad inputs name the field") {
  CHECK(field_of({{"model", "llama-3.1-8b"}, {"context", -5}}) == "context");
  CHECK(field_of({{"model", "llama-3.1-8b"}, {"context", "lots"}}) == "context");
  CHECK(field_of({{"model", "llama-3.1-8b"}}) == "context");
  CHECK(field_of({{"model", "llama-3.1-8b"}, {"context", 10}, {"precision", "fp7"}}) == "precision");
  CHECK(field_of({{"model", "llama-3.1-8b"}, {"context", 10}, {"kv_precision", "q3"}}) == "kv_precision");
  CHECK(field_of({{"model", "llama-3.1-8b"}, {"context", 10}, {"batch", 0}}) == "batch");
  CHECK(field_of({{"model", "llama-3.1-8b"}, {"context", 10}, {"gpu", "voodoo 5"}}) == "gpu");
  CHECK(field_of({{"params", 8}, {"layers", 32}, {"head_dim", 128}, {"context", 10}}) == "kv_heads");
  CHECK(field_of({{"context", 10}}) == "params");
  try {
    llm({{"model", "lama-3.1-8"}, {"context", 10}});
    FAIL("no throw");
  } catch (const InputError& e) {
    CHECK(e.field() == "model");
    CHECK(std::string(e.what()).find("did you mean llama-3.1-8b") != std::string::npos);
  }
}

TEST_CASE("llm: the CLI prints JSON and names flags in errors") {
  CliRun ok = run_cli("llm --model qwen3-32b --context 32000 --json", /*with_stderr=*/false);
  CHECK(ok.code == 0);
  json r = json::parse(ok.out);
  CHECK(r["kv_bytes_per_token"].get<double>() == 256 * 1024);

  CliRun bad = run_cli("llm --model qwen3-32b --context -5", /*with_stderr=*/true);
  CHECK(bad.code == 2);
  CHECK(bad.out.find("--context") != std::string::npos);
}
