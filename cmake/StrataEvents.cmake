# SPDX-License-Identifier: MIT
# strata_add_events(): compile .strata event definitions into headers at build time (docs/dsl.md).
#
#   strata_add_events(<target> <file.strata>...
#                     [INCLUDE_DIRS <dir>...]   # -I for include "..." lines
#                     [NO_EVENT_FLAGS])          # strata-gen --no-event-flags
#
# Each <file.strata> (relative to the current source directory) becomes
# <stem>.h under ${CMAKE_CURRENT_BINARY_DIR}/strata_events, mirroring its
# path below the source directory. That folder and the header's own folder
# are added to the target's include directories (PUBLIC, build tree only):
# events/mem.strata may be included as "events/mem.h" or "mem.h". The headers are regenerated
# when a .strata file, a file it includes, or strata-gen itself changes.
# Link the target to libstrata yourself (strata::strata).
#
# strata-gen is, in order: ${STRATA_GEN_EXECUTABLE} if set (e.g. when cross
# compiling), the `strata-gen` target of this build, the installed
# `strata::strata-gen` from find_package(strata), or strata-gen on the PATH.
include_guard(GLOBAL)

function(strata_add_events target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "NO_EVENT_FLAGS" "" "INCLUDE_DIRS")
  if(NOT TARGET ${target})
    message(FATAL_ERROR "strata_add_events: '${target}' is not a target")
  endif()
  if(NOT ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "strata_add_events(${target}): no .strata files given")
  endif()

  if(STRATA_GEN_EXECUTABLE)
    set(gen "${STRATA_GEN_EXECUTABLE}")
    set(gen_dep "${STRATA_GEN_EXECUTABLE}")
  elseif(TARGET strata-gen)
    set(gen "$<TARGET_FILE:strata-gen>")
    set(gen_dep strata-gen)
  elseif(TARGET strata::strata-gen)
    set(gen "$<TARGET_FILE:strata::strata-gen>")
    set(gen_dep strata::strata-gen)
  else()
    find_program(STRATA_GEN_PROGRAM strata-gen)
    if(NOT STRATA_GEN_PROGRAM)
      message(FATAL_ERROR "strata_add_events: strata-gen not found; "
              "use find_package(strata) or set STRATA_GEN_EXECUTABLE")
    endif()
    set(gen "${STRATA_GEN_PROGRAM}")
    set(gen_dep "${STRATA_GEN_PROGRAM}")
  endif()

  set(flags)
  foreach(dir IN LISTS ARG_INCLUDE_DIRS)
    get_filename_component(dir "${dir}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    list(APPEND flags -I "${dir}")
  endforeach()
  if(ARG_NO_EVENT_FLAGS)
    list(APPEND flags --no-event-flags)
  endif()

  set(outdir "${CMAKE_CURRENT_BINARY_DIR}/strata_events")
  set(headers)
  set(dirs "${outdir}")
  foreach(src IN LISTS ARG_UNPARSED_ARGUMENTS)
    get_filename_component(abs "${src}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    file(RELATIVE_PATH rel "${CMAKE_CURRENT_SOURCE_DIR}" "${abs}")
    if(rel MATCHES "^\\.\\./" OR IS_ABSOLUTE "${rel}")
      get_filename_component(rel "${abs}" NAME)
    endif()
    string(REGEX REPLACE "\\.strata$" "" stem "${rel}")
    set(out "${outdir}/${stem}.h")
    get_filename_component(dir "${out}" DIRECTORY)
    file(MAKE_DIRECTORY "${dir}")
    add_custom_command(
      OUTPUT "${out}"
      COMMAND ${gen} -o "${out}" -d "${out}.d" ${flags} "${abs}"
      DEPENDS "${abs}" ${gen_dep}
      DEPFILE "${out}.d"
      COMMENT "strata-gen ${rel}"
      VERBATIM)
    list(APPEND headers "${out}")
    list(APPEND dirs "${dir}")
  endforeach()

  target_sources(${target} PRIVATE ${headers})
  list(REMOVE_DUPLICATES dirs)
  foreach(dir IN LISTS dirs)
    target_include_directories(${target} PUBLIC "$<BUILD_INTERFACE:${dir}>")
  endforeach()
endfunction()
