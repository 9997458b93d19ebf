"""Builds the memtrail package with the native files it carries: librecorder (loaded through
ctypes, and by PyTorch as its allocator) and the `memtrail` command, copied into memtrail/_native
from a memtrail build or install. Where they come from, first match:

    MEMTRAIL_PREFIX=/usr/local     an installed prefix (cmake --install build --prefix ...)
    MEMTRAIL_BUILD_DIR=/path/build a build folder
    ../build                       the build folder beside this one (scripts/build.sh)

memtrail-viewer comes along when that build or prefix has it. Nothing is written into this
folder (a read-only checkout builds): setuptools' build/ and memtrail.egg-info go to a temporary
folder, removed when the build ends.

The wheel is tagged for this platform (py3-none-linux_x86_64): it has no compiled Python
extension, only the native library, so any CPython 3 on the platform takes it."""

import atexit
import ctypes
import os
import shutil
import tempfile
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

try:  # setuptools 70.1 and later carry bdist_wheel; before, the wheel package did
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:
    from wheel.bdist_wheel import bdist_wheel

HERE = Path(__file__).resolve().parent


# setuptools' intermediate files (build/, memtrail.egg-info), out of the source tree.
OUT_OF_TREE = Path(tempfile.mkdtemp(prefix="memtrail-python-build-"))
atexit.register(shutil.rmtree, OUT_OF_TREE, ignore_errors=True)


def native_sources() -> dict[str, Path]:
    """What memtrail/_native carries, by name: librecorder, the memtrail command and, when it
    was built, memtrail-viewer; SystemExit saying where they were looked for when the first two
    are missing."""
    if os.environ.get("MEMTRAIL_PREFIX"):
        prefix = Path(os.environ["MEMTRAIL_PREFIX"])
        libraries = [prefix / "lib" / "librecorder.so.0"] + sorted(prefix.glob("lib*/librecorder.so.0"))
        library = next((path for path in libraries if path.exists()), libraries[0])
        binaries = prefix / "bin"
        origin = f"MEMTRAIL_PREFIX={prefix}"
    else:
        build = Path(os.environ.get("MEMTRAIL_BUILD_DIR", HERE.parent / "build"))
        library = build / "lib" / "librecorder.so.0"
        binaries = build / "bin"
        origin = f"the build folder {build}"
    required = {"librecorder.so.0": library, "memtrail": binaries / "memtrail"}
    missing = [str(path) for path in required.values() if not path.exists()]
    if missing:
        raise SystemExit(
            f"memtrail: {' and '.join(missing)} not found in {origin}: build memtrail first "
            "(bash scripts/build.sh), or set MEMTRAIL_BUILD_DIR to a build folder or "
            "MEMTRAIL_PREFIX to an installed prefix")
    viewer = binaries / "memtrail-viewer"
    found = {**required, **({"memtrail-viewer": viewer} if viewer.exists() else {})}
    return {name: path.resolve() for name, path in found.items()}


def library_version(library: Path) -> str:
    """The package's version is the one of the librecorder it carries (memtrail_version())."""
    number = ctypes.CDLL(str(library)).memtrail_version()
    return f"{number // 10000}.{number // 100 % 100}.{number % 100}"


class build_py_with_native(build_py):
    """Copies librecorder (under its soname), the memtrail command and memtrail-viewer (when
    built) into memtrail/_native."""

    def run(self) -> None:
        super().run()
        target = Path(self.build_lib) / "memtrail" / "_native"
        target.mkdir(parents=True, exist_ok=True)
        for name, source in native_sources().items():
            shutil.copy2(source, target / name)


class bdist_wheel_for_platform(bdist_wheel):
    """A platform wheel (it carries native code) for any Python 3: no extension module inside."""

    def finalize_options(self) -> None:
        super().finalize_options()
        self.root_is_pure = False

    def get_tag(self) -> tuple[str, str, str]:
        _, _, platform = super().get_tag()
        return "py3", "none", platform


setup(
    version=library_version(native_sources()["librecorder.so.0"]),
    cmdclass={"build_py": build_py_with_native, "bdist_wheel": bdist_wheel_for_platform},
    options={"build": {"build_base": str(OUT_OF_TREE / "build")},
             "egg_info": {"egg_base": str(OUT_OF_TREE)}},
)
