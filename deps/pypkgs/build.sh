#!/usr/bin/env bash
# Builds pkgs.zip, the pure-Python libraries every python interpreter can
# import without a network: Debian 12's packages (below, each .deb pinned by
# sha256), unpacked, their C accelerators dropped (each has a pure-Python
# path it takes when the accelerator is missing), test suites left out,
# compiled to unchecked-hash .pyc by CPython 3.11 (the interpreter's
# version, so nothing is compiled at import), with Debian's IANA time zone
# database for zoneinfo and pytz, and each package's copyright file.
#
#   deps/pypkgs/build.sh OUT_DIR
#
# The zip holds site-packages/ (mounted where CPython looks for it),
# zoneinfo/ (mounted at /usr/share/zoneinfo) and doc/<package>/copyright
# (mounted at /usr/share/doc). .pyc files are stored, so the engine serves
# them as sections of the embedded zip; everything else is deflated
# (zip -n; -9 would compress them too). A
# finished build is cached under $CODE_RUNNER_CACHE (default
# ${XDG_CACHE_HOME:-~/.cache}/code-runner), keyed by this script's digest.
set -euo pipefail

OUT=${1:?usage: build.sh OUT_DIR}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

# package|version|pool path|sha256 (Debian 12 "bookworm", main)
DEBS=(
	"python3-sympy|1.11.1-1|pool/main/s/sympy/python3-sympy_1.11.1-1_all.deb|b437232be31819aafd267ddf2132c16293ef75e02fd58b4ad31eee3ef1d5b49e"
	"python3-mpmath|1.2.1-2|pool/main/m/mpmath/python3-mpmath_1.2.1-2_all.deb|2c219b63cbab11b27208ef4141c116cbb022dc1236e84981fadb46042f3ce235"
	"python3-networkx|2.8.8-1|pool/main/n/networkx/python3-networkx_2.8.8-1_all.deb|69888603d1b54696f5c3d02d05527628d2d18661d845109a62fe24aff241aa7b"
	"python3-dateutil|2.8.2-2|pool/main/p/python-dateutil/python3-dateutil_2.8.2-2_all.deb|59d696282ffeaf54395452e012715410dc414c6baaa54d4cdae56ac7c217eb31"
	"python3-tz|2022.7.1-4|pool/main/p/python-tz/python3-tz_2022.7.1-4_all.deb|b165d30ef171f9426c496900449b85d290d4c6d2de50e1c3f4adc2b55b6fd534"
	"tzdata|2026b-0+deb12u1|pool/main/t/tzdata/tzdata_2026b-0+deb12u1_all.deb|0edb49f4dffe0d5608069f7e4ba4d69544d3b9e86fc314dd8b75e9958d8e5e98"
	"python3-tabulate|0.8.9-1|pool/main/p/python-tabulate/python3-tabulate_0.8.9-1_all.deb|80715ccbff14c93a11de864a7d6a219492ac3a5fb35d7c165540e22a91774a20"
	"python3-six|1.16.0-4|pool/main/s/six/python3-six_1.16.0-4_all.deb|fd189e9cecbcf17a1fc20aec30055c8afa9c1eec00cd6e7ab385087a2ab3b0d3"
	"python3-yaml|6.0-3+b2|pool/main/p/pyyaml/python3-yaml_6.0-3+b2_amd64.deb|8d0db0b3099298fe039b94e4c52a6987798a90d23b80de3ac13c3cb75cf622a2"
	"python3-jinja2|3.1.2-1+deb12u3|pool/main/j/jinja2/python3-jinja2_3.1.2-1+deb12u3_all.deb|914e3a26742b488bca661dd12dc06198262c3a99b68f2f20ef7310aecdf82cae"
	"python3-markupsafe|2.1.2-1+b1|pool/main/m/markupsafe/python3-markupsafe_2.1.2-1+b1_amd64.deb|38310d680386db2d1b166be3ac839aa5bc7ead3de235466bd3e13a3ef4962601"
	"python3-bs4|4.11.2-2|pool/main/b/beautifulsoup4/python3-bs4_4.11.2-2_all.deb|dbd4ad1d406c0cbb5c13529b4922601df98bbc0eb79e6c032be543c43351e5f6"
	"python3-soupsieve|2.3.2-1|pool/main/s/soupsieve/python3-soupsieve_2.3.2-1_all.deb|3ab0f0567e1cfae155bdfe3eab842a697b7c536a7d36602fc345d4d7bec1eb04"
	"python3-markdown|3.4.1-2+deb12u1|pool/main/p/python-markdown/python3-markdown_3.4.1-2+deb12u1_all.deb|7f98e975cf0cc5d6b63d1ea76f1e1f2c88df91d873eac58eef8bc89a25a25d93"
	"python3-chardet|5.1.0+dfsg-2|pool/main/c/chardet/python3-chardet_5.1.0+dfsg-2_all.deb|271227b4ca709db673d8bff58b64f4a590ab17b50a9616d49aacc459bbd05f85"
	"python3-idna|3.3-1+deb12u1|pool/main/p/python-idna/python3-idna_3.3-1+deb12u1_all.deb|0bf81fb1906d3aa607482d09aa3bcbab5c263242b1fd1d93be39658fa783af1a"
	"python3-packaging|23.0-1|pool/main/p/python-packaging/python3-packaging_23.0-1_all.deb|04adb9e09aa8ed5bd8e31d31143fb265c43dcbec70da19f21e37cbe44b0c32cf"
	"python3-attr|22.2.0-1|pool/main/p/python-attrs/python3-attr_22.2.0-1_all.deb|6a12ea96a8a909445a982975279f96d7b9a1ff96c912efff39abc8d92372694a"
	"python3-more-itertools|8.10.0-2|pool/main/m/more-itertools/python3-more-itertools_8.10.0-2_all.deb|bff817d7af710ffc87123f6bd581d5b50186a5ea0065d3d2c20445ce49a93412"
	"python3-toolz|0.12.0-1|pool/main/t/toolz/python3-toolz_0.12.0-1_all.deb|0e0a07ec58110a5d07a84f3346e624b6cd92330e07fc8316d3f8a6ba9580f72f"
	"python3-pydantic|1.10.4-1+deb12u1|pool/main/p/pydantic/python3-pydantic_1.10.4-1+deb12u1_all.deb|2ba47d9f8a87c59b1aa031677ed855add1bb64fbde42aa41a740f426201b88c1"
	"python3-jsonschema|4.10.3-1|pool/main/p/python-jsonschema/python3-jsonschema_4.10.3-1_all.deb|b972212ff557ba07138b4aa7b7e2eb227260eb3fe3fac8e699a0e4b006b0ebc3"
	"python3-typing-extensions|4.4.0-1|pool/main/p/python-typing-extensions/python3-typing-extensions_4.4.0-1_all.deb|e2f88fe73b6dac2907b29d709647eb66302776f7693f45b1e95e116ddedbddd3"
	"python3-pyrsistent|0.18.1-1+b3|pool/main/p/pyrsistent/python3-pyrsistent_0.18.1-1+b3_amd64.deb|da9ab57e7889af9d077bbcf50fd7f3f29beb6e8f29b2d828324e971d34d463b3"
	"python3-webencodings|0.5.1-5|pool/main/p/python-webencodings/python3-webencodings_0.5.1-5_all.deb|355ff9b773667ed2fd97e2fce9ae9101155d90cf5ff09171900bf46e611c0ccb"
	# The documents agents are handed, and more batteries (issue 48).
	"python3-openpyxl|3.0.9-1|pool/main/o/openpyxl/python3-openpyxl_3.0.9-1_all.deb|468490fc3f43f338efc03af25987956ca541b866378d8482a33d63d988e58ce9"
	"python3-et-xmlfile|1.0.1-2.1|pool/main/p/python-et-xmlfile/python3-et-xmlfile_1.0.1-2.1_all.deb|a80d31fe47b34f693ea31ba08c1c9783e073c562258a47bf22cc51c05ed666ec"
	"python3-jdcal|1.0-1.3|pool/main/j/jdcal/python3-jdcal_1.0-1.3_all.deb|943dcb5b2dccef662dec193bf1ca1b71d4a0e9221e276668f41b4d1d39ace9b5"
	"python3-xlsxwriter|3.0.2-2|pool/main/x/xlsxwriter/python3-xlsxwriter_3.0.2-2_all.deb|08f682b576f661785ee1fb1c551046e55c195c2e45b36548184282885b2f9a3d"
	"python3-pypdf|3.4.1-1+deb12u1|pool/main/p/pypdf/python3-pypdf_3.4.1-1+deb12u1_all.deb|6f18b24e42d4a72b6adee223fd60e3033adaf1bcbf06d3a8d6a63b1530a00750"
	"python3-rich|13.3.1-1|pool/main/r/rich/python3-rich_13.3.1-1_all.deb|4922761342dd42eb989dcc148e7a251401caf0266796f9fb0907be262d4a4083"
	"python3-pygments|2.14.0+dfsg-1|pool/main/p/pygments/python3-pygments_2.14.0+dfsg-1_all.deb|405734a57b8d2722d10413c511d9b63ee78bbbdab8b2b689d7295260bc9618a2"
	"python3-markdown-it|2.1.0-5|pool/main/m/markdown-it-py/python3-markdown-it_2.1.0-5_all.deb|a2c9e79a96d824551639df11c7b942241f3b5adf3ccda07eaa0f77f4a83b3dc1"
	"python3-mdurl|0.1.2-1|pool/main/m/mdurl/python3-mdurl_0.1.2-1_all.deb|2fc5e8527b2f322ef55b2c91a0c512cd5481998fc94c507dffcf5c2f66930ea1"
	"python3-lark|1.1.5-1|pool/main/p/python-lark/python3-lark_1.1.5-1_all.deb|1555b1d017621215e91a7a1443845b0307705130b98ced8fa6a96c309d22ba42"
	"python3-pyparsing|3.0.9-1|pool/main/p/pyparsing/python3-pyparsing_3.0.9-1_all.deb|891dcf12a125dcadbae7166ad8e9d1fd22a6f1bf431ca4bce9f810da30dcd472"
	"python3-sortedcontainers|2.4.0-2|pool/main/s/sortedcontainers/python3-sortedcontainers_2.4.0-2_all.deb|b00fd22e4fd50d8ba44442607fc3c737186082b16648d3995b2e4fca642f53e1"
	"python3-tomlkit|0.11.7-1|pool/main/p/python-tomlkit/python3-tomlkit_0.11.7-1_all.deb|986a2040fbc1eacb8d468edf5747c6bf63bb009b2583a5a407fb7ac054f4d423"
	"python3-jmespath|1.0.1-1|pool/main/p/python-jmespath/python3-jmespath_1.0.1-1_all.deb|2b4351db7f00a8e4840140572b337a5005f897eaf6c7d9c929991e85a152d388"
	"python3-humanize|4.4.0-1|pool/main/p/python-humanize/python3-humanize_4.4.0-1_all.deb|5263a07f20d0c6f787ed185a49ea7d084463cd2481fd74d5e6c620e206f9d18d"
	"python3-unidecode|1.3.6-1|pool/main/u/unidecode/python3-unidecode_1.3.6-1_all.deb|4bbb0dbc5e6100bacec985eec97b62ace93220af39ca4f335e0521f8e926ccf7"
	"python3-cachetools|5.2.0-1|pool/main/p/python-cachetools/python3-cachetools_5.2.0-1_all.deb|fb845e9f029b60a02e52314da773967da5c828489a92d81fa420b05da1e9d562"
	"python3-isodate|0.6.1-1|pool/main/i/isodate/python3-isodate_0.6.1-1_all.deb|ff1a167eb7657bb281c358bec03f23db96c5761f07193f2341d47f86d7682847"
	"python3-xmltodict|0.13.0-1.1~deb12u1|pool/main/p/python-xmltodict/python3-xmltodict_0.13.0-1.1~deb12u1_all.deb|1f1157b809b8890d93741916256bcda52b0f4bc3c283840544450f62a6652056"
)
# What the build runs: the interpreter that compiles the .pyc must be 3.11.
PACKAGES=(python3.11 curl zip dpkg)

CACHE_ROOT=${CODE_RUNNER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/code-runner}
KEY=$(sha256sum "$HERE/build.sh" | cut -c1-16)
CACHE=$CACHE_ROOT/pypkgs/$KEY

install_outputs() {
	cp "$CACHE/pkgs.zip" "$OUT/pkgs.zip.tmp" && mv "$OUT/pkgs.zip.tmp" "$OUT/pkgs.zip"
	(cd "$OUT" && sha256sum pkgs.zip > SHA256SUMS.pkgs.tmp && mv SHA256SUMS.pkgs.tmp SHA256SUMS.pkgs)
	echo "pkgs.zip (${#DEBS[@]} Debian packages, build $KEY) -> $OUT"
}

if [[ -f $CACHE/done ]]; then
	install_outputs
	exit 0
fi

missing=()
for p in "${PACKAGES[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
	echo "installing Debian packages for the python package bundle: ${missing[*]}"
	if [[ $(id -u) != 0 ]]; then
		echo "error: the python package bundle needs ${missing[*]}; run as root or install them with apt-get" >&2
		exit 1
	fi
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/pypkgs-build.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/root" "$WORK/stage/site-packages" "$WORK/stage/doc"

for d in "${DEBS[@]}"; do
	IFS='|' read -r name version path sum <<<"$d"
	file=$CACHE_ROOT/debs/$(basename "$path")
	if [[ ! -f $file ]] || [[ $(sha256sum "$file" | cut -d' ' -f1) != "$sum" ]]; then
		mkdir -p "$CACHE_ROOT/debs"
		echo "fetching $MIRROR/$path"
		curl -fsSL --retry 3 -o "$file.tmp" "$MIRROR/$path" || {
			echo "error: cannot fetch $MIRROR/$path; Debian drops superseded point releases from its mirrors: set DEBIAN_MIRROR (e.g. to a snapshot.debian.org URL of that date) or update the pin above" >&2
			exit 1
		}
		mv "$file.tmp" "$file"
	fi
	got=$(sha256sum "$file" | cut -d' ' -f1)
	if [[ $got != "$sum" ]]; then
		echo "error: $(basename "$path") has sha256 $got, want $sum; refusing to build from it" >&2
		exit 1
	fi
	pkgroot=$WORK/root/$name
	mkdir -p "$pkgroot"
	dpkg-deb -x "$file" "$pkgroot"
	got_version=$(dpkg-deb -f "$file" Version)
	[[ $got_version == "$version" ]] || { echo "error: $(basename "$path") is version $got_version, want $version" >&2; exit 1; }
	if [[ -d $pkgroot/usr/lib/python3/dist-packages ]]; then
		cp -a "$pkgroot/usr/lib/python3/dist-packages/." "$WORK/stage/site-packages/"
	fi
	if [[ -d $pkgroot/usr/share/zoneinfo ]]; then
		# Regular files only (links become copies); posix/ and right/ are
		# variants the zoneinfo module does not look in.
		mkdir -p "$WORK/stage/zoneinfo"
		# localtime links to the build host's /etc/localtime: left out.
		(cd "$pkgroot/usr/share/zoneinfo" && find . -mindepth 1 \( -path ./posix -o -path ./right -o -path ./localtime \) -prune -o \( -type f -o -type l \) -print |
			while read -r f; do mkdir -p "$WORK/stage/zoneinfo/$(dirname "$f")"; cp -L "$f" "$WORK/stage/zoneinfo/$f"; done)
	fi
	mkdir -p "$WORK/stage/doc/$name"
	cp -L "$pkgroot/usr/share/doc/$name/copyright" "$WORK/stage/doc/$name/copyright"
done

SITE=$WORK/stage/site-packages
# C accelerators: each package falls back to its pure-Python code without
# them (PyYAML's yaml._yaml, MarkupSafe's _speedups, pyrsistent's pvectorc).
# A C extension cannot load under WASI anyway.
find "$SITE" -name '*.so' -print -delete | sed 's|.*/|dropping C accelerator |'
rm -rf "$SITE/_yaml" # the Cython shim around the dropped accelerator
# Test suites (named tests/ in every package here; sympy.testing and
# networkx.testing are public modules and stay), scripts' entry points.
find "$SITE" -depth -type d \( -name tests -o -name __pycache__ \) -exec rm -rf {} +
rm -f "$SITE/isympy.py"
[[ -z $(find "$SITE" -name '*.so' -o -name '*.pyd') ]] || { echo "error: a C extension is left in the bundle" >&2; exit 1; }

/usr/bin/python3.11 -m compileall -q -j"$(nproc)" --invalidation-mode unchecked-hash "$SITE" >/dev/null
# The same bytes whatever the builder's umask and clock.
chmod -R u=rwX,go=rX "$WORK/stage"
find "$WORK/stage" -exec touch -h -d '2023-02-08 00:00:00' {} +
(cd "$WORK/stage" && find . -type f | LC_ALL=C sort | sed 's|^\./||' | zip -q -X -n .pyc -@ "$WORK/pkgs.zip")

mkdir -p "$CACHE"
cp "$WORK/pkgs.zip" "$CACHE/pkgs.zip"
touch "$CACHE/done"
install_outputs
