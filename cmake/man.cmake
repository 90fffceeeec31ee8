# Man pages from docs/man/NAME.SECTION.scd, with scdoc (Debian: scdoc):
# a small C program made for man pages, whose sources read as plain text
# in the repository and which refuses malformed input. Every page goes to
# share/man/manSECTION/NAME.SECTION. A section 3 page documents several
# functions; each other name its NAME section lists gets a one-line page
# (".so man3/PAGE.3"), so that `man rr_nfs_close` finds rr_nfs_open(3).
find_program(SCDOC scdoc)
if(NOT SCDOC)
  message(FATAL_ERROR "scdoc not found (Debian: apt-get install scdoc)")
endif()

file(GLOB RR_MAN_SRC CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/docs/man/*.scd)
set(RR_MAN_DIR ${PROJECT_BINARY_DIR}/man)
set(RR_MAN_OUT)
foreach(src ${RR_MAN_SRC})
  get_filename_component(page ${src} NAME_WLE) # nfsrdmad.8
  string(REGEX MATCH "[0-9]$" section ${page})
  set(out ${RR_MAN_DIR}/man${section}/${page})
  add_custom_command(OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${RR_MAN_DIR}/man${section}
    COMMAND ${SCDOC} < ${src} > ${out}
    DEPENDS ${src}
    COMMENT "scdoc ${page}")
  list(APPEND RR_MAN_OUT ${out})
  install(FILES ${out} DESTINATION ${CMAKE_INSTALL_MANDIR}/man${section})

  if(NOT section STREQUAL "3")
    continue()
  endif()
  # The names: the first line after "# NAME", up to " - ".
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${src})
  file(READ ${src} text)
  string(REGEX MATCH "# NAME\n+([^\n]*) - " _ "${text}")
  string(REPLACE "," ";" names "${CMAKE_MATCH_1}")
  string(REPLACE "\\" "" names "${names}")
  string(REGEX REPLACE "\\.3$" "" self ${page})
  foreach(n ${names})
    string(STRIP "${n}" n)
    if(n STREQUAL self)
      continue()
    endif()
    set(link ${RR_MAN_DIR}/man3/${n}.3)
    file(CONFIGURE OUTPUT ${link} CONTENT ".so man3/${page}\n")
    install(FILES ${link} DESTINATION ${CMAKE_INSTALL_MANDIR}/man3)
  endforeach()
endforeach()
add_custom_target(man ALL DEPENDS ${RR_MAN_OUT})
