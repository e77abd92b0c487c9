/* headroom_core: Headroom's estimator as a plain C library, one binary per OS for any Python (ctypes)
 * or any other language. Every function of the core's JSON API (catalog, estimate, plan, apply_preset, suggest_preset,
 * decode_tile, inspect, explain, llm, train, runs) is reached through one call that takes and returns UTF-8 JSON text. */
#ifndef HEADROOM_CAPI_H
#define HEADROOM_CAPI_H

#ifdef _WIN32
#define HEADROOM_CAPI_EXPORT __declspec(dllexport)
#else
#define HEADROOM_CAPI_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Runs `function` on `request_json` (an object; inspect takes {"paths": [...]}, explain {"text": ...},
 * catalog {}). Returns a NUL-terminated JSON document that the caller frees with headroom_free:
 *   {"ok": <the function's result>}
 *   {"error": {"kind": "input" | "file" | "data" | "internal", "field": <name or null>, "message": <text>}}
 * "data": one of Headroom's data files (HEADROOM_DATA_DIR or built in) is broken; the message names it and the key.
 * Never returns NULL except when even that document cannot be allocated; never throws or aborts. */
HEADROOM_CAPI_EXPORT char* headroom_call(const char* function, const char* request_json);

/* Frees a document returned by headroom_call (NULL is ignored). */
HEADROOM_CAPI_EXPORT void headroom_free(char* document);

/* The library's version and the interface's version ("0.1.0", 1): a loader refuses a mismatch. */
HEADROOM_CAPI_EXPORT const char* headroom_version(void);
HEADROOM_CAPI_EXPORT int headroom_abi_version(void);

#ifdef __cplusplus
}
#endif

#endif
