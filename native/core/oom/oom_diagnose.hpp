#pragma once
// From the figures of an out-of-memory message to a diagnosis in plain words and ordered fixes.
#include <nlohmann/json.hpp>

#include "core/oom/oom_report.hpp"

namespace headroom::oom {

// Sets report.diagnosis (and may add notes). Needs report.recognised; otherwise leaves it empty.
//
// Diagnoses, the first that applies wins:
//   system_ram               the allocation was in system RAM (PyTorch's CPU allocator)
//   kv_cache_too_large       vLLM refused the KV cache at start-up, or llama.cpp failed while creating
//                            the context (KV cache + compute buffer)
//   request_larger_than_card one allocation is larger than the whole card (or the MPS limit)
//   other_process            other processes (PIDs listed) or memory outside PyTorch hold enough that,
//                            freed, the request would fit
//   fragmentation            PyTorch holds enough reserved-but-unallocated memory for the request
//   out_of_memory            the rest: the job needs more than the card has
// The rules are an ordered table (oom_diagnose.cpp kRules); their words are native/data/oom_fixes.json,
// read once. Throws Error naming the file and the key when a text the rules use is missing (or the file
// has one they do not use).
Diagnosis diagnose(Report& report);

// The check diagnose() applies to oom_fixes.json at load, for a document given here (tests).
void check_texts(const nlohmann::json& doc);

}  // namespace headroom::oom
