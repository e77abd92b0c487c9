// Training memory. Golden numbers and their sources:
//  - a 7B full fine-tune with AdamW in mixed precision ~112 GB = 16 bytes per parameter (issue #2;
//    ZeRO, arXiv:1910.02054 section 3.1: 2 + 2 + 12 bytes).
//  - LoRA rank 16 on all linear layers of Llama 3(.1) 8B: 41,943,040 trainable parameters (PEFT's
//    print_trainable_parameters in the widely shared Unsloth Llama-3 8B notebooks), and the same
//    from the config.json shapes computed in the test.
#include <string>

#include "catch.hpp"
#include "support/input_errors.hpp"
#include "core/api/api.hpp"
#include "core/base/error.hpp"

using headroom::InputError;
using nlohmann::json;

namespace {

json train(json request) { return headroom::api::train(request); }

std::string field_of(const json& request) {
  return support::input_error_field([&] { headroom::api::train(request); });
}

double component(const json& r, const std::string& name) {
  for (const auto& c : r["components"])
    if (c["name"] == name) return c["bytes"].get<double>();
  return -1;
}

}  // namespace

TEST_CASE("train: a 7B full fine-tune with AdamW needs ~112 GB of model states") {
  json r = train({{"params", 7}, {"method", "full"}});
  CHECK(r["model_states_bytes"].get<double>() == Approx(112e9));
  CHECK(component(r, "weights") == Approx(14e9));
  CHECK(component(r, "gradients") == Approx(14e9));
  CHECK(component(r, "master_weights") == Approx(28e9));
  CHECK(component(r, "optimizer_states") == Approx(56e9));
  CHECK(r["activations_bytes"].is_null());  // no architecture given: not guessed
  // 8-bit Adam: states 2 bytes instead of 8 (Dettmers et al. 2021) -> 10 bytes/param; SGD momentum 12.
  CHECK(train({{"params", 7}, {"method", "full"}, {"optimizer", "adamw8bit"}})["model_states_bytes"].get<double>() ==
        Approx(70e9));
  CHECK(train({{"params", 7}, {"method", "full"}, {"optimizer", "sgd"}})["model_states_bytes"].get<double>() ==
        Approx(84e9));
  // Pure fp32: 4 + 4 + 8, no master copy.
  json fp32 = train({{"params", 7}, {"method", "full"}, {"precision", "fp32"}});
  CHECK(fp32["model_states_bytes"].get<double>() == Approx(112e9));
  CHECK(component(fp32, "master_weights") == -1);
}

TEST_CASE("train: LoRA trainable parameters for Llama 3.1 8B rank 16") {
  json r = train({{"model", "llama-3.1-8b"}, {"method", "lora"}, {"lora_rank", 16}});
  CHECK(r["trainable_params"].get<double>() == 41943040.0);
  // Independent: per layer r x (in + out) for q 4096->4096, k/v 4096->1024, o 4096->4096,
  // gate/up 4096->14336, down 14336->4096; 32 layers.
  double per_layer = 16.0 * ((4096 + 4096) + 2 * (4096 + 1024) + (4096 + 4096) + 2 * (4096 + 14336) + (14336 + 4096));
  CHECK(r["trainable_params"].get<double>() == per_layer * 32);
  // Frozen base in 16 bit.
  CHECK(component(r, "frozen_weights_bf16") == Approx(8030261248.0 * 2));
}

TEST_CASE("train: QLoRA stores the linear layers in 4 bit") {
  json lora = train({{"model", "llama-3.1-8b"}, {"method", "lora"}});
  json q = train({{"model", "llama-3.1-8b"}, {"method", "qlora"}});
  // Linear weights of Llama 3.1 8B from config.json: 32 x (4096*4096*2 + 2*4096*1024 + 3*4096*14336).
  double linear = 32.0 * (4096.0 * 4096 * 2 + 2 * 4096.0 * 1024 + 3 * 4096.0 * 14336);
  CHECK(component(q, "frozen_weights_nf4") == Approx(linear * 4.127 / 8));  // QLoRA paper: 4.127 bits
  CHECK(component(q, "frozen_other_bf16") == Approx((8030261248.0 - linear) * 2));
  CHECK(q["model_states_bytes"].get<double>() < lora["model_states_bytes"].get<double>() / 2.5);
}

TEST_CASE("train: activations grow with tokens and shrink with checkpointing") {
  json base = train({{"model", "llama-3.1-8b"}, {"method", "lora"}, {"seq_len", 2048}, {"batch", 1}});
  json longer = train({{"model", "llama-3.1-8b"}, {"method", "lora"}, {"seq_len", 4096}, {"batch", 1}});
  json ckpt = train({{"model", "llama-3.1-8b"}, {"method", "lora"}, {"seq_len", 2048}, {"gradient_checkpointing", true}});
  // Korthikanti et al. 2022: 34 x s x b x h bytes per layer without the score term.
  CHECK(base["activations_bytes"].get<double>() == Approx(34.0 * 2048 * 4096 * 32));
  CHECK(longer["activations_bytes"].get<double>() == Approx(2 * base["activations_bytes"].get<double>()));
  CHECK(ckpt["activations_bytes"].get<double>() == Approx(2048.0 * 4096 * (2 * 32 + 34)));
  CHECK(base["logits_bytes"].get<double>() == Approx(2048.0 * 128256 * 4));
}

TEST_CASE("train: verdict and bad inputs") {
  CHECK(train({{"params", 7}, {"method", "full"}, {"gpu", "H100"}})["verdict"] == "does not fit");
  CHECK(train({{"model", "llama-3.1-8b"}, {"method", "qlora"}, {"gpu", "4090"}})["verdict"] == "fits");
  CHECK(field_of({{"params", 7}}) == "method");
  CHECK(field_of({{"params", 7}, {"method", "dpo"}}) == "method");
  CHECK(field_of({{"params", 7}, {"method", "full"}, {"optimizer", "adafactor"}}) == "optimizer");
  CHECK(field_of({{"params", 7}, {"method", "full"}, {"precision", "int4"}}) == "precision");
  CHECK(field_of({{"params", 7}, {"method", "lora"}}) == "layers");
  CHECK(field_of({{"params", -7}, {"method", "full"}}) == "params");
  CHECK(field_of({{"model", "llama-3.1-8b"}, {"method", "lora"}, {"lora_rank", 0}}) == "lora_rank");
  CHECK(field_of({{"model", "llama-3.1-8b"}, {"method", "lora"}, {"seq_len", -1}}) == "seq_len");
  CHECK(field_of({{"model", "gpt-5"}, {"method", "lora"}}) == "model");
}
