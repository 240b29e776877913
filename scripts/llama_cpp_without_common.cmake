# Included by llama.cpp's own CMakeLists right after its project() call (setup passes
# CMAKE_PROJECT_llama.cpp_INCLUDE). llama-cpp-python forces LLAMA_BUILD_COMMON on as a cache
# variable; a normal variable of the same name, set here, is what llama.cpp's option() and
# if() then read (policy CMP0077), so its `common` library and the HTTP client only `common`
# uses are left out. caldrix loads libllama and ggml through llama-cpp-python, which never loads
# `common`: it is more than half of the build's compile time.
set(LLAMA_BUILD_COMMON OFF)
