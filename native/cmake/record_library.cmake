# Writes <library>.record ({"size": bytes, "sha256": hex}) once the library is linked, so the nodes can
# tell a finished build from a file cut short or changed later without loading it (and without starting
# a process to try: nodes/native/native_loader.py). A link that stops half-way leaves no record for the new
# file, or the old one, whose hash no longer matches.
#   cmake -DLIBRARY=<path> -P record_library.cmake
if(NOT EXISTS "${LIBRARY}")
  message(FATAL_ERROR "record_library: ${LIBRARY} does not exist")
endif()
file(SIZE "${LIBRARY}" size)
file(SHA256 "${LIBRARY}" sha256)
file(WRITE "${LIBRARY}.record.tmp" "{\"size\": ${size}, \"sha256\": \"${sha256}\"}\n")
file(RENAME "${LIBRARY}.record.tmp" "${LIBRARY}.record")
