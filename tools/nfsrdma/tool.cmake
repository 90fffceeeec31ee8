# nfsrdma: the NFSv3 client's command line (ls, stat, cat, get, put, ...).
# Included from tools/CMakeLists.txt; the binary lands in build/bin/.
add_executable(nfsrdma
  ${CMAKE_CURRENT_LIST_DIR}/main.c
  ${CMAKE_CURRENT_LIST_DIR}/cmds.c
  ${CMAKE_CURRENT_LIST_DIR}/xfer.c
  ${CMAKE_CURRENT_LIST_DIR}/partial.c
  ${CMAKE_CURRENT_LIST_DIR}/tree.c
  ${CMAKE_CURRENT_LIST_DIR}/progress.c
  ${CMAKE_CURRENT_LIST_DIR}/bench.c
  ${CMAKE_CURRENT_LIST_DIR}/stat.c
  ${CMAKE_CURRENT_LIST_DIR}/mount.c
  ${CMAKE_CURRENT_LIST_DIR}/mount_helper.c
  ${CMAKE_CURRENT_LIST_DIR}/mount_ctl.c)
target_include_directories(nfsrdma PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(nfsrdma PRIVATE rr_nfs3_client rr_tool_common
  rr_tool_control m)
target_compile_definitions(nfsrdma PRIVATE RR_VERSION="${PROJECT_VERSION}")
set_target_properties(nfsrdma PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)
# mount: through the FUSE adapter, where libfuse3 is (src/fuse).
if(TARGET rr_fuse)
  target_link_libraries(nfsrdma PRIVATE rr_fuse)
  target_compile_definitions(nfsrdma PRIVATE RR_HAVE_FUSE=1)
  # mount(8)'s helper for -t fuse.nfsrdma and fstab (mount_helper.c): a
  # link to nfsrdma, next to it in the build tree and in sbin installed.
  add_custom_command(TARGET nfsrdma POST_BUILD
    COMMAND ${CMAKE_COMMAND} -E create_symlink nfsrdma
            ${PROJECT_BINARY_DIR}/bin/mount.fuse.nfsrdma)
endif()
