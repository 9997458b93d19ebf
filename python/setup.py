"""Builds the memtrail package with the native files it carries: librecorder (loaded through
ctypes, and by PyTorch as its allocator) and the `memtrail` command, copied into memtrail/_native
from a memtrail build or install. Where they come from, first match:

    MEMTRAIL_PREFIX=/usr/local     an installed prefix (cmake --install build --prefix ...)
    MEMTRAIL_BUILD_DIR=/path/build a build folder
    ../build                       the build folder beside this one (scripts/build.sh)

The wheel is tagged for this platform (py3-none-linux_x86_64): it has no compiled Python
extension, only the native library, so any CPython 3 on the platform takes it."""

import ctypes
import os
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

try:  # setuptools 70.1 and later carry bdist_wheel; before, the wheel package did
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:
    from wheel.bdist_wheel import bdist_wheel

HERE = Path(__file__).resolve().parent


def native_sources() -> tuple[Path, Path]:
    """librecorder and the memtrail command to copy, or SystemExit saying where they were looked for."""
    if os.environ.get("MEMTRAIL_PREFIX"):
        prefix = Path(os.environ["MEMTRAIL_PREFIX"])
        libraries = [prefix / "lib" / "librecorder.so.0"] + sorted(prefix.glob("lib*/librecorder.so.0"))
        library = next((path for path in libraries if path.exists()), libraries[0])
        cli = prefix / "bin" / "memtrail"
        origin = f"MEMTRAIL_PREFIX={prefix}"
    else:
        build = Path(os.environ.get("MEMTRAIL_BUILD_DIR", HERE.parent / "build"))
        library = build / "lib" / "librecorder.so.0"
        cli = build / "bin" / "memtrail"
        origin = f"the build folder {build}"
    missing = [str(path) for path in (library, cli) if not path.exists()]
    if missing:
        raise SystemExit(
            f"memtrail: {' and '.join(missing)} not found in {origin}: build memtrail first "
            "(bash scripts/build.sh), or set MEMTRAIL_BUILD_DIR to a build folder or "
            "MEMTRAIL_PREFIX to an installed prefix")
    return library.resolve(), cli.resolve()


def library_version(library: Path) -> str:
    """The package's version is the one of the librecorder it carries (memtrail_version())."""
    number = ctypes.CDLL(str(library)).memtrail_version()
    return f"{number // 10000}.{number // 100 % 100}.{number % 100}"


class build_py_with_native(build_py):
    """Copies librecorder (under its soname) and the memtrail command into memtrail/_native."""

    def run(self) -> None:
        super().run()
        library, cli = native_sources()
        target = Path(self.build_lib) / "memtrail" / "_native"
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy2(library, target / "librecorder.so.0")
        shutil.copy2(cli, target / "memtrail")


class bdist_wheel_for_platform(bdist_wheel):
    """A platform wheel (it carries native code) for any Python 3: no extension module inside."""

    def finalize_options(self) -> None:
        super().finalize_options()
        self.root_is_pure = False

    def get_tag(self) -> tuple[str, str, str]:
        _, _, platform = super().get_tag()
        return "py3", "none", platform


setup(
    version=library_version(native_sources()[0]),
    cmdclass={"build_py": build_py_with_native, "bdist_wheel": bdist_wheel_for_platform},
)
