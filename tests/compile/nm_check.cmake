# SPDX-License-Identifier: MIT
# Compile one source, then check the strata symbols it leaves undefined.
#   cmake -DCOMPILER=cc -DFLAGS="-std=c11;..." -DSRC=f.c -DOBJ=f.o -DNM=nm
#         -DEXPECT=none|some -P nm_check.cmake
# EXPECT=none: nothing undefined may mention strata (-DSTRATA_DISABLE);
# EXPECT=some: something must (the same program traced: proves the check
# can see a reference).
foreach(v COMPILER FLAGS SRC OBJ NM EXPECT)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "nm_check.cmake: ${v} not set")
  endif()
endforeach()

execute_process(COMMAND ${COMPILER} ${FLAGS} -c ${SRC} -o ${OBJ}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "compiling ${SRC} failed:\n${out}")
endif()

execute_process(COMMAND ${NM} -u ${OBJ}
                RESULT_VARIABLE rc OUTPUT_VARIABLE syms ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${NM} -u ${OBJ} failed:\n${err}")
endif()
string(REGEX MATCHALL "[^\n]*strata[^\n]*" hits "${syms}")

if(EXPECT STREQUAL "none" AND hits)
  string(REPLACE ";" "\n" hits "${hits}")
  message(FATAL_ERROR
    "${OBJ}: built with -DSTRATA_DISABLE but still references strata:\n${hits}")
elseif(EXPECT STREQUAL "some" AND NOT hits)
  message(FATAL_ERROR "${OBJ}: traced build references no strata symbol; "
                      "the STRATA_DISABLE check would prove nothing")
endif()
list(LENGTH hits n)
message(STATUS "${OBJ}: ${n} undefined strata symbol(s), expected ${EXPECT}")
