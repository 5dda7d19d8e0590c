"""Here for two things pyproject.toml cannot say: the compiled HLO reader `xlagraph._core` (the Rust
crate in rust/, built by setuptools-rust with cargo), and shipping `xlagraph-capture.pth` (the
XLAGRAPH_CAPTURE start-up hook) at the top of site-packages. A .pth file outside a package is not
package data, so build_py copies it to the wheel's root, and for `pip install -e .` (PEP 660)
into the editable wheel, which setuptools assembles from the `install` command's install_lib."""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools_rust import Binding, RustExtension

PTH = Path(__file__).parent / "xlagraph" / "capture" / "xlagraph-capture.pth"


class build_py_with_pth(build_py):
    def run(self) -> None:
        super().run()
        targets = [self.build_lib]
        if getattr(self, "editable_mode", False):
            targets = [self.get_finalized_command("install").install_lib]
        for target in targets:
            self.copy_file(str(PTH), str(Path(target) / PTH.name), preserve_mode=False)


setup(
    cmdclass={"build_py": build_py_with_pth},
    rust_extensions=[
        # debug=False: an editable install (`pip install -e .`) is otherwise a debug build, ~10x slower.
        RustExtension(
            "xlagraph._core",
            path="rust/Cargo.toml",
            binding=Binding.PyO3,
            py_limited_api=True,
            debug=False,
        )
    ],
    options={"bdist_wheel": {"py_limited_api": "cp310"}},
)
