# SPDX-License-Identifier: MIT
# Writes OUT, a C file holding the page's files (FILES, relative to WEB) as vw_assets (view.h):
# the xxd -i step of strata view, in CMake so the build needs no other tool.
# cmake -DWEB=dir -DOUT=file.c -DFILES=a,b -P embed.cmake
set(c "/* Generated from web/ by src/view/embed.cmake: do not edit. */\n#include \"view.h\"\n\n")
set(table "")
set(i 0)
string(REPLACE "," ";" FILES "${FILES}")
foreach(f ${FILES})
  file(READ ${WEB}/${f} hex HEX)
  string(LENGTH "${hex}" n)
  math(EXPR n "${n} / 2")
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," hex "${hex}")
  string(REGEX REPLACE "((0x..,){16})" "\\1\n" hex "${hex}")
  string(APPEND c "static const unsigned char a${i}[] = {\n${hex}0 };\n")
  string(APPEND table "\t{ \"${f}\", a${i}, ${n} },\n")
  math(EXPR i "${i} + 1")
endforeach()
string(APPEND c "\nconst struct vw_asset vw_assets[] = {\n${table}};\n")
string(APPEND c "const unsigned vw_nassets = ${i};\n")
file(WRITE ${OUT}.tmp "${c}")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
