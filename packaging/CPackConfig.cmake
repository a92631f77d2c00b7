# CPackConfig.cmake: installs the files only a packaged bounced needs (default config, advice,
# units, sysusers/tmpfiles entries, man pages) and describes the Debian package.
# Included by the top CMakeLists.txt; `cpack -G DEB` in the build directory builds the .deb.
# The binaries and the rules install from daemon/CMakeLists.txt.

set(BOUNCED_PKG_DIR ${CMAKE_CURRENT_LIST_DIR})
# `make install` / cpack install what is built, without first building every test, bench and
# fuzz target: build (at least bounced and bouncectl) before packaging.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY TRUE)
# Debian 12 keeps units in /lib/systemd/system (the same directory as /usr/lib/... with merged
# /usr); ask systemd's pkg-config file where it wants them.
pkg_get_variable(BOUNCED_UNIT_DIR systemd systemdsystemunitdir)
if(NOT BOUNCED_UNIT_DIR)
  set(BOUNCED_UNIT_DIR /lib/systemd/system)
endif()

install(FILES ${BOUNCED_PKG_DIR}/bounced.toml DESTINATION /etc/bounced
        PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ)
install(DIRECTORY DESTINATION /etc/bounced/rules.d)
install(FILES ${BOUNCED_PKG_DIR}/advice.toml DESTINATION ${CMAKE_INSTALL_DATADIR}/bounced)
install(FILES ${PROJECT_SOURCE_DIR}/systemd/bounced.service
              ${PROJECT_SOURCE_DIR}/systemd/bounced-report.service
              ${PROJECT_SOURCE_DIR}/systemd/bounced-report.timer
              ${PROJECT_SOURCE_DIR}/systemd/bounced-metrics.service
              ${PROJECT_SOURCE_DIR}/systemd/bounced-metrics.timer
        DESTINATION ${BOUNCED_UNIT_DIR})
install(FILES ${BOUNCED_PKG_DIR}/bounced.sysusers DESTINATION lib/sysusers.d
        RENAME bounced.conf)
install(FILES ${BOUNCED_PKG_DIR}/bounced.tmpfiles DESTINATION lib/tmpfiles.d
        RENAME bounced.conf)
install(FILES ${BOUNCED_PKG_DIR}/man/bounced.8 DESTINATION ${CMAKE_INSTALL_MANDIR}/man8)
install(FILES ${BOUNCED_PKG_DIR}/man/bouncectl.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${BOUNCED_PKG_DIR}/man/bounced.toml.5 DESTINATION ${CMAKE_INSTALL_MANDIR}/man5)
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME bounced)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "bounced")
set(CPACK_PACKAGE_CONTACT "bounced maintainers <maintainers@bounced.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "bounce processor for Postfix: classify, record and suppress bounces")
set(CPACK_PACKAGE_DESCRIPTION
    "bounced follows Postfix's delivery results (mail log, journald, DSNs), classifies every
 failure (hard bounce, mailbox full, iCloud CS01/CS02/HM08 and other sender-side
 rejections, ...), records each event in SQLite, suppresses addresses that hard-bounced and
 enforces the suppression list at send time (milter at RCPT, Postfix socketmap). bouncectl
 queries and manages it and mails a daily report.")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION mail)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# postfix: its group owns the sockets Postfix connects to; systemd: sysusers, tmpfiles and the
# units; init-system-helpers: deb-systemd-helper/-invoke in the maintainer scripts;
# libgmime-3.0-0: opened with dlopen on first use (classifier/gmime_loader.h), which
# dpkg-shlibdeps does not see.
set(CPACK_DEBIAN_PACKAGE_DEPENDS
    "postfix, systemd, init-system-helpers (>= 1.54~), libgmime-3.0-0 (>= 3.2)")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "sqlite3")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${BOUNCED_PKG_DIR}/conffiles ${BOUNCED_PKG_DIR}/postinst ${BOUNCED_PKG_DIR}/prerm
    ${BOUNCED_PKG_DIR}/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
# Debug info belongs in a -dbgsym package, not in the one admins install.
set(CPACK_STRIP_FILES TRUE)
include(CPack)
