# cuDNN 9 for the `cudnn` kernel (kernels/cudnn), included when the CUDA backend is built. Looks beside
# the CUDA toolkit, under $CUDNN_PATH, then in the system's paths (Debian/Ubuntu's libcudnn9-dev puts
# the headers in /usr/include/<arch>). cudnn_graph.h (the backend graph API's header) exists from
# cuDNN 9.0 on. Sets FLASHBENCH_HAVE_CUDNN, or FLASHBENCH_CUDNN_WHY when it is not built.
if(FLASHBENCH_CUDNN STREQUAL "OFF")
  set(FLASHBENCH_CUDNN_WHY "FLASHBENCH_CUDNN=OFF")
  message(STATUS "flashbench: cudnn kernel OFF (FLASHBENCH_CUDNN=OFF)")
  return()
endif()

find_path(CUDNN_INCLUDE_DIR NAMES cudnn_graph.h
          HINTS ${CUDAToolkit_INCLUDE_DIRS} ENV CUDNN_PATH PATH_SUFFIXES include)
find_library(CUDNN_LIBRARY NAMES cudnn
             HINTS ${CUDAToolkit_LIBRARY_DIR} ENV CUDNN_PATH PATH_SUFFIXES lib64 lib)
if(NOT CUDNN_INCLUDE_DIR OR NOT CUDNN_LIBRARY OR NOT EXISTS "${CUDNN_INCLUDE_DIR}/cudnn.h")
  set(FLASHBENCH_CUDNN_WHY "configure found no cuDNN 9 (cudnn.h and cudnn_graph.h, libcudnn); set CUDNN_PATH")
  message(STATUS "flashbench: cudnn kernel OFF (${FLASHBENCH_CUDNN_WHY})")
  return()
endif()

set(_fb_cudnn_version "?")
if(EXISTS "${CUDNN_INCLUDE_DIR}/cudnn_version.h")
  file(STRINGS "${CUDNN_INCLUDE_DIR}/cudnn_version.h" _fb_cudnn_defs REGEX "^#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) ")
  string(REGEX REPLACE ".*CUDNN_MAJOR ([0-9]+).*CUDNN_MINOR ([0-9]+).*CUDNN_PATCHLEVEL ([0-9]+).*" "\\1.\\2.\\3"
         _fb_cudnn_version "${_fb_cudnn_defs}")
endif()

set(FLASHBENCH_HAVE_CUDNN ON)
target_include_directories(flashbench_kernels PUBLIC ${CUDNN_INCLUDE_DIR})
target_link_libraries(flashbench_kernels PUBLIC ${CUDNN_LIBRARY})
target_compile_definitions(flashbench_kernels PUBLIC FLASHBENCH_HAVE_CUDNN=1)
message(STATUS "flashbench: cudnn kernel ON (cuDNN ${_fb_cudnn_version}: ${CUDNN_LIBRARY})")
