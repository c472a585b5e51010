#!/usr/bin/env bash
# What make test-moodle needs from Debian's packages (run as root): PHP's CLI with the extensions
# Moodle's environment check requires (admin/environment.xml of 4.5 and 5.x: iconv mbstring curl
# openssl ctype zip zlib gd simplexml spl pcre dom xml xmlreader intl json hash fileinfo sodium,
# soap/tokenizer/exif recommended) plus pgsql for the database, PostgreSQL's server and Chromium.
# The harness (tests/moodle/moodle_site.py) checks all this itself and says what is missing; it
# never installs anything.
set -euo pipefail
if [ "$(id -u)" != 0 ]; then
    echo "install-php.sh: run as root (it calls apt-get)" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
packages="php-cli php-pgsql php-xml php-mbstring php-curl php-zip php-gd php-intl php-soap"
ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || packages="$packages postgresql"
command -v chromium >/dev/null || packages="$packages chromium"
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq $packages
php -r 'echo "PHP ", PHP_VERSION, ": ", implode(" ", get_loaded_extensions()), "\n";'
