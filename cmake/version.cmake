# Writes OUT (a header with the version and the git commit) at every build, touching it only when the
# text changes: results then name the commit they were built from, not the one at configure time.
execute_process(COMMAND git describe --always --dirty --abbrev=12
                WORKING_DIRECTORY ${SOURCE_DIR}
                OUTPUT_VARIABLE git OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT git)
  set(git "unknown")
endif()
set(text "#pragma once\n#define FLASHBENCH_VERSION \"${VERSION}\"\n#define FLASHBENCH_GIT \"${git}\"\n")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT "${old}" STREQUAL "${text}")
  file(WRITE ${OUT} "${text}")
endif()
