# SPDX-License-Identifier: MIT
# strata_add_events(<target> <file.strata>...): placeholder until strata-gen lands.
function(strata_add_events target)
  message(FATAL_ERROR "strata_add_events: strata-gen is not built yet")
endfunction()
