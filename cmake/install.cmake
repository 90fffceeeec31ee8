# What `cmake --install` puts where (GNUInstallDirs), and how an outside
# program finds it: pkg-config files and a CMake package. The libraries are
# static archives for now; shared ones wait for every exported symbol to
# carry the rr_ prefix, so that a version script can name them.
include(GNUInstallDirs)

install(TARGETS nfsrdmad RUNTIME DESTINATION ${CMAKE_INSTALL_SBINDIR})
install(TARGETS nfsrdma rpcrdma-bench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS rpcrdma rr_nfs3_xdr rr_nfs3_client rr_nfs3_server
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})

# Every public header but alloc_inject.h, which steers the library's own
# allocations for tests. faults.h goes in: rr_device_opts names its plan,
# and "faults" is a provider any caller may open by name.
file(GLOB RR_PUBLIC_HEADERS CONFIGURE_DEPENDS
     ${PROJECT_SOURCE_DIR}/include/rpcrdma/*.h)
list(REMOVE_ITEM RR_PUBLIC_HEADERS
     ${PROJECT_SOURCE_DIR}/include/rpcrdma/alloc_inject.h)
install(FILES ${RR_PUBLIC_HEADERS}
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/rpcrdma)

# The archives' own dependencies, spelled for pkg-config and for the CMake
# package alike.
# (src/ found rdma-core in its own scope; its target says what it found.)
get_target_property(RR_RPCRDMA_DEPS rpcrdma INTERFACE_LINK_LIBRARIES)
if("PkgConfig::RR_VERBS" IN_LIST RR_RPCRDMA_DEPS)
  set(RR_PC_VERBS "libibverbs librdmacm")
  set(RR_CONFIG_VERBS ON)
else()
  set(RR_PC_VERBS "")
  set(RR_CONFIG_VERBS OFF)
endif()
# The prefix is the one `cmake --install --prefix` is given, known only
# when installing: the first pass fills in all else and keeps
# @RR_PC_PREFIX@, the install step fills that in.
set(RR_PC_DIR ${PROJECT_BINARY_DIR}/pkgconfig)
set(RR_PC_PREFIX "@RR_PC_PREFIX@")
foreach(pc rpcrdma rpcrdma-nfs3)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/${pc}.pc.in
                 ${RR_PC_DIR}/${pc}.pc.in @ONLY)
  install(CODE "
    set(RR_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
    set(_pc \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig/${pc}.pc\")
    message(STATUS \"Installing: \${_pc}\")
    configure_file(\"${RR_PC_DIR}/${pc}.pc.in\" \"\${_pc}\" @ONLY)
    list(APPEND CMAKE_INSTALL_MANIFEST_FILES \"\${_pc}\")")
endforeach()

include(CMakePackageConfigHelpers)
set(RR_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/rpcrdma)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/rpcrdmaConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/rpcrdmaConfig.cmake
  INSTALL_DESTINATION ${RR_CMAKE_DIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_LIBDIR)
# 0.x: any change may break callers, so only the same minor version fits.
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/cmake/rpcrdmaConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/rpcrdmaConfig.cmake
              ${PROJECT_BINARY_DIR}/cmake/rpcrdmaConfigVersion.cmake
        DESTINATION ${RR_CMAKE_DIR})
