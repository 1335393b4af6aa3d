#!/usr/bin/env bash
# The CANN build rehearsal (issue 24), for a developer with a CANN toolkit copy but no NPU (not
# run in CI, which has no toolkit): lays the generated project out as build.sh does, configures
# it with `cmake --preset`, runs the host-side steps that can run on this machine and stops at
# the device compiler, then prints which steps ran, passed, failed or could not run and why.
#
#   scripts/rehearse-cann.sh --cann DIR [--opbuild FILE] [--work DIR]
#
#   --cann DIR      the toolkit root (ascend-toolkit/<version>), e.g. a checkout of the public
#                   CANN-8.1.RC1 copy: headers, cmake files, msOpGen templates, Python tools.
#   --opbuild FILE  an op_build that runs on this machine (e.g. the open-source opbuild); by
#                   default the toolkit's own tools/opbuild/op_build, which a copy for another
#                   architecture cannot run.
#   --work DIR      where the project and logs go (default target/cann-rehearsal; wiped first).
#
# The toolkit directory is never written: the configure sees an overlay of it (symlinks) in
# WORK/toolkit that adds what an install has and a copy may lack: include/ and lib64/ at the
# root (the installer's links to <arch>-linux/), the links the installer makes inside include/
# (*/script/filelist.csv's softlink column, e.g. include/tiling -> ascendc/include/highlevel_api/
# tiling, where op_host's tiling/platform/platform_ascendc.h lives), empty stand-ins for the three host libraries
# opbuild links (libexe_graph, libregister, libtiling_api) when the copy has no binaries, and
# toolkit/tools/opbuild/op_build. A stand-in is named in the summary: what links against one
# proves the compile, not the link.
# Exit status: 0 when every step that could run here passed, 1 otherwise, 2 on bad usage.
set -uo pipefail

die() { echo "rehearse-cann: $*" >&2; exit 2; }

cann="" opbuild="" work=""
while [ $# -gt 0 ]; do
    case "$1" in
        --cann) cann=${2:-}; shift 2 ;;
        --opbuild) opbuild=${2:-}; shift 2 ;;
        --work) work=${2:-}; shift 2 ;;
        -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
        *) die "unknown argument $1 (see --help)" ;;
    esac
done
[ -n "$cann" ] || die "--cann DIR is required (the toolkit root, ascend-toolkit/<version>)"
cann=$(cd "$cann" 2>/dev/null && pwd -P) || die "--cann: no such directory"
repo=$(cd "$(dirname "$0")/.." && pwd -P)
work=${work:-$repo/target/cann-rehearsal}
template="$cann/tools/op_project_templates/ascendc/customize"
[ -d "$template/cmake" ] || die "$template/cmake not found: is $cann a CANN toolkit root?"
arch_dir=$(cd "$cann" && ls -d ./*-linux 2>/dev/null | head -1 | sed 's|^\./||')
[ -n "$arch_dir" ] && [ -d "$cann/$arch_dir/include" ] || die "$cann has no <arch>-linux/include"
if [ -n "$opbuild" ]; then
    opbuild=$(cd "$(dirname "$opbuild")" && pwd -P)/$(basename "$opbuild")
    [ -x "$opbuild" ] || die "--opbuild $opbuild is not an executable file"
fi
command -v cmake >/dev/null || die "cmake not on PATH (3.19 or newer: pip install cmake)"
command -v g++ >/dev/null || die "g++ not on PATH"
command -v python3 >/dev/null || die "python3 not on PATH"

rm -rf "$work"
mkdir -p "$work/logs"
project="$work/project"
overlay="$work/toolkit"
summary=()
failed=0
# record STATUS STEP DETAIL: STATUS is ran-ok, FAILED, stopped, not-run or stand-in.
record() {
    summary+=("$(printf '%-8s %-34s %s' "$1" "$2" "$3")")
    if [ "$1" = FAILED ]; then failed=1; fi
}
# step NAME LOG CMD...: runs CMD with output to LOG, records the outcome; returns its status.
step() {
    local name=$1 log=$2
    shift 2
    local started=$SECONDS
    "$@" >"$log" 2>&1
    local rc=$?
    if [ $rc -eq 0 ]; then
        record ran-ok "$name" "$((SECONDS - started)) s, log $log"
    else
        record FAILED "$name" "exit $rc after $((SECONDS - started)) s, log $log: $(grep -m1 -iE 'error|fatal' "$log" | cut -c1-160)"
    fi
    return $rc
}

# 1. The project, generated from the catalogue with the current templates.
step "generate the project" "$work/logs/generate.log" \
    cargo run --quiet --manifest-path "$repo/Cargo.toml" --bin opgen -- gen --out "$project" || exit 1
rm -rf "$project/torch"  # the torch extension is built apart (build-npu), not by the CANN project

# 2. The overlay toolkit.
mkdir -p "$overlay"
for entry in "$cann"/* "$cann"/.[!.]*; do
    [ -e "$entry" ] || continue
    case "$(basename "$entry")" in toolkit|lib64|include) ;; *) ln -s "$entry" "$overlay/" ;; esac
done
mkdir -p "$overlay/include" "$overlay/lib64" "$overlay/toolkit/tools/opbuild"
for entry in "$cann"/include/* "$cann/$arch_dir"/include/*; do
    [ -e "$entry" ] && [ ! -e "$overlay/include/$(basename "$entry")" ] && ln -s "$entry" "$overlay/include/"
done
# The installer's links directly inside <arch>/include (filelist.csv: column 4 is the installed
# path, column 9 the link made to it).
installer_links=0
while IFS=, read -r link target; do
    name=${link#"$arch_dir/include/"}
    if [ ! -e "$overlay/include/$name" ] && [ -e "$cann/$target" ]; then
        ln -s "$cann/$target" "$overlay/include/$name" && installer_links=$((installer_links + 1))
    fi
done < <(cat "$cann"/*/script/filelist.csv 2>/dev/null |
    awk -F, -v inc="$arch_dir/include/" 'index($9, inc) == 1 && split(substr($9, length(inc) + 1), p, "/") == 1 { print $9 "," $4 }' |
    sort -u)
if [ $installer_links -gt 0 ]; then
    record stand-in "installer links in include/" "$installer_links made from */script/filelist.csv (the copy lacks them)"
fi
for lib in "$cann/lib64"/* "$cann/$arch_dir/lib64"/*; do
    [ -e "$lib" ] && [ ! -e "$overlay/lib64/$(basename "$lib")" ] && ln -s "$lib" "$overlay/lib64/"
done
for entry in "$cann"/toolkit/*; do
    [ -e "$entry" ] && ln -s "$entry" "$overlay/toolkit/"
done
stand_ins=()
for lib in exe_graph register tiling_api; do
    if [ ! -e "$overlay/lib64/lib$lib.so" ]; then
        echo "" | g++ -x c++ -shared -fPIC -o "$overlay/lib64/lib$lib.so" - && stand_ins+=("lib$lib.so")
    fi
done
if [ ${#stand_ins[@]} -gt 0 ]; then
    record stand-in "host libraries" "the copy has no ${stand_ins[*]}: empty stand-ins in $overlay/lib64"
fi
toolkit_opbuild=$opbuild
if [ -z "$toolkit_opbuild" ]; then
    for candidate in "$cann/toolkit/tools/opbuild/op_build" "$cann/tools/opbuild/op_build"; do
        if [ -e "$candidate" ]; then toolkit_opbuild=$candidate; break; fi
    done
fi
opbuild_runs=no
if [ -n "$toolkit_opbuild" ]; then
    ln -s "$toolkit_opbuild" "$overlay/toolkit/tools/opbuild/op_build"
    # op_build without arguments prints its usage; "Exec format error" (126) means another arch.
    "$toolkit_opbuild" >/dev/null 2>&1
    rc=$?
    if [ $rc -ne 126 ] && [ $rc -ne 127 ]; then opbuild_runs=yes; fi
    [ "$opbuild_runs" = yes ] || record not-run "op_build (op_proto, aclnn, ops-info)" \
        "$toolkit_opbuild does not run here ($(file -b "$toolkit_opbuild" | cut -d, -f1-2)); pass --opbuild FILE"
else
    record not-run "op_build (op_proto, aclnn, ops-info)" "no op_build in the toolkit; pass --opbuild FILE"
fi

# The toolkit's environment, as set_env.sh gives it (build.sh sources that on a real install).
export ASCEND_TOOLKIT_HOME=$overlay ASCEND_HOME_PATH=$overlay ASCEND_OPP_PATH=$overlay/opp
export ASCEND_AICPU_PATH=$overlay TOOLCHAIN_HOME=$overlay/toolkit
export LD_LIBRARY_PATH=$overlay/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONPATH=$cann/python/site-packages:$cann/opp/built-in/op_impl/ai_core/tbe${PYTHONPATH:+:$PYTHONPATH}

# 3. The layout build.sh makes: the toolkit's own msOpGen cmake/ and scripts/.
step "copy msOpGen cmake/ and scripts/" "$work/logs/layout.log" \
    cp -rL "$template/cmake" "$template/scripts" "$project/"

# 4. The op_host files: each compiled against the headers, then all linked as one library
#    (check-cann's -flto -Werror=odr link: HOST_LINK_FLAGS in src/toolchain/check_cann.rs).
host_includes=(-I "$cann/$arch_dir/include" -I "$cann/$arch_dir/ascendc/include/highlevel_api" -I "$project/op_host")
step "op_host: one library, -Werror=odr" "$work/logs/op_host_link.log" \
    g++ -shared -fPIC -flto -O1 -Werror=odr -std=c++11 -D_GLIBCXX_USE_CXX11_ABI=0 "${host_includes[@]}" \
    "$project"/op_host/*.cpp -o "$work/libop_host_check.so"

# 5. Configure, Release then Debug, with the preset (cmake >= 3.19). opbuild runs inside it.
configure() {
    local build=$1 type=$2
    (cd "$project" && cmake -S . -B "$build" --preset=default -DCMAKE_BUILD_TYPE="$type" \
        -DASCEND_CANN_PACKAGE_PATH="$overlay" -DASCEND_COMPUTE_UNIT=ascend910b)
}
for type in Release Debug; do
    build="$project/build_$type"
    log="$work/logs/configure_$type.log"
    started=$SECONDS
    configure "$build" "$type" >"$log" 2>&1
    rc=$?
    if [ $rc -eq 0 ]; then
        record ran-ok "cmake --preset configure ($type)" "$((SECONDS - started)) s, log $log"
    elif [ "$opbuild_runs" = no ] && grep -q "opbuild produced no" "$log"; then
        # Expected without a runnable op_build: the project's own message, then no generate.
        record stopped "cmake --preset configure ($type)" \
            "$((SECONDS - started)) s: configured op_host/ and op_kernel/; no generate, op_build wrote no op_proto.cc; log $log"
    else
        record FAILED "cmake --preset configure ($type)" \
            "exit $rc after $((SECONDS - started)) s, log $log: $(grep -m1 -iE 'error' "$log" | cut -c1-160)"
    fi
    # The kernel compile options as CANN's own parser reads them (opdesc_parser.py, which
    # assigns every ALL line rather than merging): --cce-auto-sync=off must survive.
    ini="$build/autogen/custom_compile_options.ini"
    if [ -s "$ini" ]; then
        step "kernel options via opdesc_parser ($type)" "$work/logs/options_$type.log" python3 - "$project/cmake/util" "$build/autogen" "$type" <<'EOF'
import sys
sys.path.insert(0, sys.argv[1])
import opdesc_parser as p
op = p.OpDesc("AnyOp")
p._get_op_custom_options([op], sys.argv[2])
options = op.custom_all_compile_options.get(p.SOC_ALL, [])
print("ALL options as CANN applies them:", options)
assert "--cce-auto-sync=off" in options, "--cce-auto-sync=off is lost"
if sys.argv[3] == "Debug":
    assert "-g" in options and "-O0" in options, "Debug's -g -O0 is lost"
EOF
    else
        record not-run "kernel options via opdesc_parser ($type)" "$ini is empty or absent: the configure stopped before op_kernel/CMakeLists.txt"
    fi
done

# 6. The ops-info JSON, with the toolkit's parse_ini_to_json.py, from op_build's ini.
ops_info=$(ls "$project"/build_Release/autogen/aic-*-ops-info.ini 2>/dev/null | head -1)
if [ -n "$ops_info" ]; then
    step "ops-info ini -> json" "$work/logs/ops_info.log" \
        python3 "$project/cmake/util/parse_ini_to_json.py" "$ops_info" "$work/ops-info.json"
else
    record not-run "ops-info ini -> json" "no aic-*-ops-info.ini: op_build writes it"
fi

# 7. The device build: the kernels need the toolkit's bisheng/ccec, the package needs them.
compiler=""
for candidate in "$cann/compiler/ccec_compiler/bin/bisheng" "$cann/$arch_dir/ccec_compiler/bin/bisheng" \
    "$cann/compiler/ccec_compiler/bin/ccec"; do
    if [ -x "$candidate" ] && "$candidate" --version >/dev/null 2>&1; then compiler=$candidate; break; fi
done
if [ -n "$compiler" ] && [ -f "$project/build_Release/Makefile" ]; then
    step "kernels (target binary)" "$work/logs/binary.log" cmake --build "$project/build_Release" --target binary -j2
else
    record not-run "kernels, package, install" "stops here: no device compiler (bisheng/ccec) runs on this machine, or the configure did not finish"
fi

echo "rehearse-cann: $cann ($arch_dir) on $(uname -m), cmake $(cmake --version | head -1 | awk '{print $3}')"
printf '%-8s %-34s %s\n' status step detail
printf '%s\n' "${summary[@]}"
exit $failed
