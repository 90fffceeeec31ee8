# nfsrdmad: the NFSv3 server over RPC-over-RDMA and TCP (build/bin/).
add_executable(nfsrdmad
  ${CMAKE_CURRENT_LIST_DIR}/main.c
  ${CMAKE_CURRENT_LIST_DIR}/serve.c
  ${CMAKE_CURRENT_LIST_DIR}/rpcbind.c
  ${CMAKE_CURRENT_LIST_DIR}/counters.c
  ${CMAKE_CURRENT_LIST_DIR}/report.c)
target_link_libraries(nfsrdmad PRIVATE rr_nfs3_server rpcrdma rr_tool_control
  PkgConfig::TIRPC Threads::Threads)
# base/log.h: the rate limit of the lines clients make
target_include_directories(nfsrdmad PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_compile_definitions(nfsrdmad PRIVATE RR_VERSION="${PROJECT_VERSION}")
set_target_properties(nfsrdmad PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)
