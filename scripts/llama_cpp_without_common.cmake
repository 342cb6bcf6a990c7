# Included at the end of llama.cpp's own project() call (CMAKE_PROJECT_llama.cpp_INCLUDE, set
# by scripts/install), after llama-cpp-python's CMakeLists has forced LLAMA_BUILD_COMMON on:
# csro never loads llama.cpp's common library (argument and chat parsers, an HTTP client), so
# turning it back off here skips its compile without patching the sdist, and pip's wheel cache
# (keyed by the sdist) still keeps the wheel. The libraries csro loads (libllama, libggml*)
# are built exactly as before. docs/llm.md, "Install time".
set(LLAMA_BUILD_COMMON OFF CACHE BOOL "llama.cpp common library (not used by csro)" FORCE)
