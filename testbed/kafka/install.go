// Package kafka installs Apache Kafka from Maven Central and runs a local
// KRaft cluster of combined broker+controller nodes on loopback ports, for
// end-to-end tests of lossaudit against real brokers.
package kafka

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// DefaultVersion is the Apache Kafka release used when LOSSAUDIT_KAFKA_VERSION is unset.
const DefaultVersion = "3.9.2"

// VersionEnv names the environment variable selecting the broker version.
const VersionEnv = "LOSSAUDIT_KAFKA_VERSION"

// CacheEnv names the environment variable overriding the download cache directory.
const CacheEnv = "LOSSAUDIT_CACHE"

// Version returns the broker version selected by LOSSAUDIT_KAFKA_VERSION, or DefaultVersion.
func Version() string {
	if v := strings.TrimSpace(os.Getenv(VersionEnv)); v != "" {
		return v
	}
	return DefaultVersion
}

// Major returns the major version number of a Kafka version string ("3.9.2" -> 3).
func Major(version string) int {
	n := 0
	for _, r := range version {
		if r < '0' || r > '9' {
			break
		}
		n = n*10 + int(r-'0')
	}
	return n
}

// TestbedDir finds the testbed/ directory of the checkout by walking up from
// the working directory (tests run inside the checkout).
func TestbedDir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding testbed dir: %w", err)
	}
	for {
		cand := filepath.Join(dir, "testbed", "kafka", "pom.xml")
		if _, err := os.Stat(cand); err == nil {
			return filepath.Join(dir, "testbed"), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("finding testbed dir: no testbed/kafka/pom.xml above the working directory")
		}
		dir = parent
	}
}

// CacheDir returns the directory holding downloaded jars and built artifacts:
// $LOSSAUDIT_CACHE if set, else testbed/.cache of the checkout.
func CacheDir() (string, error) {
	if d := os.Getenv(CacheEnv); d != "" {
		return d, nil
	}
	tb, err := TestbedDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(tb, ".cache"), nil
}

// Install makes sure the jars of the given Kafka version are in the cache and
// returns the directory holding them. It runs Maven only on the first call for
// a version; concurrent callers (other test processes) are serialised by a lock file.
func Install(ctx context.Context, version string) (string, error) {
	var extra []string
	if Major(version) >= 4 {
		extra = append(extra, "-Dkafka4")
	}
	return installPom(ctx, "kafka", "kafka", version, extra...)
}

// InstallTools makes sure the jars of the Kafka tools the record-level
// scenarios run (VerifiableProducer, MirrorMaker 2 with the Connect
// runtime; testbed/kafka/tools/pom.xml) are in the cache and returns the
// directory holding them, like Install.
func InstallTools(ctx context.Context, version string) (string, error) {
	return installPom(ctx, "kafka-tools", filepath.Join("kafka", "tools"), version)
}

// installPom copies the runtime dependencies of the pom in testbed/pomDir
// for version into the cache directory name-version/libs, once.
func installPom(ctx context.Context, name, pomDir, version string, extra ...string) (string, error) {
	tb, err := TestbedDir()
	if err != nil {
		return "", err
	}
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, name+"-"+version)
	libs := filepath.Join(dir, "libs")
	done := filepath.Join(dir, ".complete")
	if _, err := os.Stat(done); err == nil {
		return libs, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("installing %s %s: %w", name, version, err)
	}
	unlock, err := lockFile(dir + ".lock")
	if err != nil {
		return "", fmt.Errorf("installing %s %s: %w", name, version, err)
	}
	defer unlock()
	if _, err := os.Stat(done); err == nil {
		return libs, nil
	}
	_ = os.RemoveAll(libs)
	args := append([]string{"-q", "-B", "-f", filepath.Join(tb, pomDir, "pom.xml"),
		"dependency:copy-dependencies", "-DincludeScope=runtime",
		"-Dkafka.version=" + version, "-DoutputDirectory=" + libs}, extra...)
	cmd := exec.CommandContext(ctx, "mvn", args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("installing %s %s with mvn %s: %w\n%s", name, version, strings.Join(args, " "), err, out)
	}
	if err := os.WriteFile(done, []byte(version+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("installing %s %s: %w", name, version, err)
	}
	return libs, nil
}

// lockFile takes an exclusive flock on path and returns its release function.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
