#!/bin/sh
# systemd-test-image.sh: build, once, the virtual machine image the test of
# an ordinary user under a real `systemd --user` boots (testutil.SystemdVM):
# Debian bookworm from Debian's mirror (debootstrap), with systemd as pid 1
# on cgroup v2, a user manager started at boot for the account
# senclaw-user (uid 1000, lingering), dbus, bubblewrap, python3, node and
# strace, and a
# unit that mounts the test's own disk (/dev/vdb) and runs its guest.sh as
# root, its output on the serial console, then powers off.
#
# A virtual machine, not a container: on a host whose cgroups are v1 (or
# hybrid) the memory controller belongs to the host's v1 hierarchy, and no
# container, privileged or not, can have it on cgroup v2, which is the only
# place systemd delegates it to an ordinary user. A kernel of its own has
# it.
#
# Prints the image's directory (root.img, vmlinuz, initrd.img). The image
# is kept in $CACHE under a hash of this script, so a changed script builds
# a new one and an unchanged one costs nothing. Needs root. Set SKIP_APT=1
# to skip installing debootstrap, qemu and e2fsprogs.
set -eu

CACHE=${SENCLAW_TEST_CACHE:-/var/cache/senclaw-test}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
PACKAGES=systemd,systemd-sysv,dbus,dbus-user-session,libpam-systemd,udev,kmod,bubblewrap,python3,nodejs,strace,procps,linux-image-cloud-amd64

have() { command -v "$1" >/dev/null 2>&1; }

hash=$(sha256sum "$0" | cut -c1-16)
out=$CACHE/systemd-$hash
if [ -f "$out/root.img" ]; then
	echo "$out"
	exit 0
fi

if [ "${SKIP_APT:-}" != 1 ] && { ! have debootstrap || ! have qemu-system-x86_64 || ! have mkfs.ext4; }; then
	apt-get update >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends debootstrap qemu-system-x86 e2fsprogs >&2
fi

mkdir -p "$CACHE"
work=$(mktemp -d "$CACHE/build-XXXXXX")
trap 'rm -rf "$work"' EXIT
root=$work/rootfs
debootstrap --variant=minbase --include="$PACKAGES" bookworm "$root" "$MIRROR" >&2

echo senclaw-vm >"$root/etc/hostname"
echo "/dev/vda / ext4 defaults 0 1" >"$root/etc/fstab"
chroot "$root" useradd -m -u 1000 -s /bin/sh senclaw-user
# Linger: logind starts the user's manager at boot, with no login.
mkdir -p "$root/var/lib/systemd/linger"
touch "$root/var/lib/systemd/linger/senclaw-user"
mkdir -p "$root/mnt/test"
cat >"$root/etc/systemd/system/senclaw-test.service" <<'EOF'
[Unit]
Description=The test's guest.sh, from its own disk
Wants=user@1000.service
After=user@1000.service multi-user.target

[Service]
Type=oneshot
StandardOutput=tty
StandardError=tty
TTYPath=/dev/ttyS0
ExecStart=/bin/sh -c 'mount -o ro /dev/vdb /mnt/test && sh /mnt/test/guest.sh; echo SENCLAW-GUEST-DONE'
ExecStartPost=/bin/systemctl poweroff --no-block

[Install]
WantedBy=multi-user.target
EOF
ln -s /etc/systemd/system/senclaw-test.service "$root/etc/systemd/system/multi-user.target.wants/senclaw-test.service"
# A quiet, quick boot: no login prompt on the console, no timers.
for unit in serial-getty@ttyS0.service getty@tty1.service apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer dpkg-db-backup.timer; do
	ln -sf /dev/null "$root/etc/systemd/system/$unit"
done
cp "$root"/boot/vmlinuz-* "$work/vmlinuz"
cp "$root"/boot/initrd.img-* "$work/initrd.img"
mkfs.ext4 -q -F -L root -d "$root" "$work/root.img" 2G >&2
rm -rf "$root"
mv "$work" "$out"
trap - EXIT
echo "$out"
