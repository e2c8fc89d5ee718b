"""Options and fixtures of the Python tests. ctest passes the build's paths as options
(python/CMakeLists.txt); run by hand:

    /usr/bin/python3 -m pytest python/tests --tandem-package=build/python \
        --tandem-program=build/tools/tandem --tandem-build=build --tandem-source=. \
        --tandem-cmake=cmake --work-dir=/tmp/tandem-python-tests
"""

import os
import sys

import pytest


def pytest_addoption(parser):
    parser.addoption("--tandem-package", help="folder holding the built tandem package")
    parser.addoption("--tandem-program", help="the tandem program")
    parser.addoption("--tandem-build", help="the build tree")
    parser.addoption("--tandem-source", help="the source tree")
    parser.addoption("--tandem-cmake", default="cmake", help="the cmake program")
    parser.addoption("--work-dir", help="a folder for the tests' files (emptied first)")


def pytest_configure(config):
    package = config.getoption("--tandem-package")
    if package:
        sys.path.insert(0, os.path.abspath(package))


class Paths:
    def __init__(self, config):
        self.program = config.getoption("--tandem-program")
        self.build = config.getoption("--tandem-build")
        self.source = os.path.abspath(
            config.getoption("--tandem-source") or os.path.join(os.path.dirname(__file__), "..", ".."))
        self.cmake = config.getoption("--tandem-cmake")
        self.work = config.getoption("--work-dir")
        self.tiny_cnn = os.path.join(self.source, "examples", "models", "tiny_cnn")
        # The shared models sit beside the checkout (../shared/models), as in the other suites.
        self.shared_models = os.path.normpath(os.path.join(self.source, "..", "shared", "models"))


@pytest.fixture(scope="session")
def paths(request):
    return Paths(request.config)


@pytest.fixture(scope="session")
def work_dir(request, tmp_path_factory):
    folder = request.config.getoption("--work-dir")
    if not folder:
        return str(tmp_path_factory.mktemp("work"))
    import shutil
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    return folder
