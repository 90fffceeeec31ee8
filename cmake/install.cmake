# What `cmake --install` puts where (GNUInstallDirs), and how an outside
# program finds it: pkg-config files and a CMake package, which give the
# shared libraries (cmake/shared.cmake) unless asked for the static ones;
# man pages (cmake/man.cmake); the systemd unit and its example options.
include(GNUInstallDirs)

install(TARGETS nfsrdmad RUNTIME DESTINATION ${CMAKE_INSTALL_SBINDIR})
install(TARGETS nfsrdma rpcrdma-bench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# mount(8) runs /sbin/mount.fuse.nfsrdma for -t fuse.nfsrdma and fstab
# lines (tools/nfsrdma/mount_helper.c): a relative link to nfsrdma.
if(TARGET rr_fuse)
  install(CODE "
    set(_sbin \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_SBINDIR}\")
    file(RELATIVE_PATH _rel \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_SBINDIR}\"
         \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}/nfsrdma\")
    file(MAKE_DIRECTORY \"\${_sbin}\")
    file(CREATE_LINK \"\${_rel}\" \"\${_sbin}/mount.fuse.nfsrdma\" SYMBOLIC)
    message(STATUS \"Installing: \${_sbin}/mount.fuse.nfsrdma -> \${_rel}\")")
endif()
install(TARGETS rpcrdma rr_nfs3_xdr rr_nfs3_client rr_nfs3_server
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS rpcrdma_shared rr_nfs3_client_shared rr_nfs3_server_shared
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})

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
# when installing: the first pass fills in all else and keeps the @RR_*@
# of paths, the install step fills those in. TEMPLATE becomes
# DIR/NAME under the prefix.
function(rr_install_configured template dir name)
  set(RR_PC_PREFIX "@RR_PC_PREFIX@")
  set(RR_SBINDIR "@RR_SBINDIR@")
  set(RR_SYSCONFDIR "@RR_SYSCONFDIR@")
  set(RR_DOCDIR "@RR_DOCDIR@")
  set(pass1 ${PROJECT_BINARY_DIR}/configured/${name}.in)
  configure_file(${template} ${pass1} @ONLY)
  install(CODE "
    set(RR_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
    set(RR_SBINDIR \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_SBINDIR}\")
    set(RR_DOCDIR \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_DOCDIR}\")
    # As GNUInstallDirs: /usr keeps its configuration in /etc.
    if(CMAKE_INSTALL_PREFIX STREQUAL \"/usr\")
      set(RR_SYSCONFDIR /etc)
    else()
      set(RR_SYSCONFDIR \"\${CMAKE_INSTALL_PREFIX}/etc\")
    endif()
    set(_f \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${dir}/${name}\")
    message(STATUS \"Installing: \${_f}\")
    configure_file(\"${pass1}\" \"\${_f}\" @ONLY)
    list(APPEND CMAKE_INSTALL_MANIFEST_FILES \"\${_f}\")")
endfunction()
foreach(pc rpcrdma rpcrdma-nfs3)
  rr_install_configured(${PROJECT_SOURCE_DIR}/cmake/${pc}.pc.in
                        ${CMAKE_INSTALL_LIBDIR}/pkgconfig ${pc}.pc)
endforeach()

# systemd looks for units under lib/systemd/system of /usr (and of
# /usr/local, for a local install).
set(RR_SYSTEMD_UNITDIR lib/systemd/system CACHE STRING
    "systemd system units, under the install prefix")
rr_install_configured(${PROJECT_SOURCE_DIR}/dist/systemd/nfsrdmad.service.in
                      ${RR_SYSTEMD_UNITDIR} nfsrdmad.service)
install(FILES ${PROJECT_SOURCE_DIR}/dist/nfsrdmad.default
        DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)

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
