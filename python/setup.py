# SPDX-License-Identifier: Apache-2.0
# python/setup.py: builds libcorten.so with CMake from the repository root and puts it into the
# package, so `pip install ./python` works on a machine with the C build's dependencies
# (scripts/install-deps.sh).
"""The build step of the corten package.

CMake configures the repository root (the parent of this folder) in build/cmake here, builds
the shared library alone (no tests, examples or benchmarks), and the library is copied into the
package as corten/libcorten.so. CORTEN_CMAKE_ARGS adds arguments to the configure step (for
example -DCORTEN_CUDA=OFF); CMAKE_BUILD_PARALLEL_LEVEL sets the build's jobs (default: the
number of CPUs).
"""
import os
import shlex
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


class BuildWithCMake(build_py):
    """build_py, then the C library into the built package."""

    def run(self):
        super().run()
        if not os.path.exists(os.path.join(ROOT, "CMakeLists.txt")):
            raise RuntimeError("corten: %s is not the corten repository (no CMakeLists.txt); "
                               "install with pip install ./python from a clone" % ROOT)
        build = os.path.join(HERE, "build", "cmake")
        args = ["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
                "-DCORTEN_TESTS=OFF", "-DCORTEN_EXAMPLES=OFF", "-DCORTEN_BENCH=OFF"]
        args += shlex.split(os.environ.get("CORTEN_CMAKE_ARGS", ""))
        subprocess.check_call(args)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 1))
        subprocess.check_call(["cmake", "--build", build, "--target", "corten", "-j", jobs])
        lib = os.path.realpath(os.path.join(build, "libcorten.so"))
        dest = os.path.join(self.build_lib, "corten")
        os.makedirs(dest, exist_ok=True)
        shutil.copyfile(lib, os.path.join(dest, "libcorten.so"))


class BinaryDistribution(Distribution):
    """The wheel holds a shared library: a platform wheel, not a pure-Python one."""

    def has_ext_modules(self):
        return True


setup(cmdclass={"build_py": BuildWithCMake}, distclass=BinaryDistribution)
