# Writes OUT (a header with the version and the git commit) at every build, touching it only when the
# text changes: results then name the commit they were built from, not the one at configure time.
# The environment's FLASHBENCH_GIT, where set, names the commit instead: for a copy of a checkout built where its git
# metadata is absent or not that of the tree (results/h200/s46/calls/devbuild.sh on the device, whose copy's .git is
# the session's first commit).
if(DEFINED ENV{FLASHBENCH_GIT} AND NOT "$ENV{FLASHBENCH_GIT}" STREQUAL "")
  set(git "$ENV{FLASHBENCH_GIT}")
  if(NOT git MATCHES "^[0-9A-Za-z._-]+$")
    message(FATAL_ERROR "FLASHBENCH_GIT: '${git}' is not a commit name (letters, digits, '.', '_', '-')")
  endif()
else()
  execute_process(COMMAND git describe --always --dirty --abbrev=12
                  WORKING_DIRECTORY ${SOURCE_DIR}
                  OUTPUT_VARIABLE git OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
endif()
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
