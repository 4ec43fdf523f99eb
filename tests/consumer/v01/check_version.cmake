# cmake -DPACKAGE_FIND_VERSION=X.Y -DVERSION_FILE=<prefix>/share/cmake/nnfuzz/nnfuzzConfigVersion.cmake -P check_version.cmake
# Prints TRUE or FALSE: whether the installed version file accepts find_package(nnfuzz X.Y).
include("${VERSION_FILE}")
if(PACKAGE_VERSION_COMPATIBLE)
  message("TRUE")
else()
  message("FALSE")
endif()
