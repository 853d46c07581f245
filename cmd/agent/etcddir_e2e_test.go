package main

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/netagent-io/netagent/pkg/models"
)

// TestE2EEmbeddedEtcdDirReused: runs of the agent on one --etcd-embedded
// directory (make run's .run/etcd) reuse it: the second run has the
// first's data, and the directory does not grow with the runs (etcd
// preallocates a 64 MB WAL segment per directory: a new directory per run
// piled up 62 MB each time).
func TestE2EEmbeddedEtcdDirReused(t *testing.T) {
	cfg := testConfig(t) // VPP disabled, as make run
	cfg.Linux.Disabled = true
	const key = "config/vpp/v2/interfaces/kept"
	var sizes []int64
	var walFiles []int
	for run := range 3 {
		a := startAgent(t, cfg, true)
		kv := newEtcdClient(t, cfg.Etcd.EmbeddedClientURL)
		ctx, cancel := kv.ctx()
		resp, err := kv.c.Get(ctx, models.EtcdKey(models.DefaultLabel, key))
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if run == 0 {
			kv.putRaw(key, `{"name":"kept","type":"SOFTWARE_LOOPBACK"}`)
		} else if len(resp.Kvs) != 1 {
			t.Errorf("run %d: the key put in the first run is gone: the directory was not reused", run+1)
		}
		_ = kv.c.Close()
		if err := a.stop(); err != nil {
			t.Fatal(err)
		}
		size, wals := dirUsage(t, cfg.Etcd.EmbeddedDir)
		sizes, walFiles = append(sizes, size), append(walFiles, wals)
	}
	t.Logf("after each run: %v bytes on disk, %v WAL files", sizes, walFiles)
	if walFiles[2] != walFiles[0] || sizes[2] > sizes[0]+sizes[0]/4 {
		t.Errorf("the directory grows with the runs: %v bytes, %v WAL files", sizes, walFiles)
	}
}

// dirUsage is the disk space the files under dir take (preallocated blocks
// included) and the number of WAL segments.
func dirUsage(t *testing.T, dir string) (int64, int) {
	t.Helper()
	var size int64
	wals := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := os.Stat(path)
		if err != nil {
			return err
		}
		size += info.Size()
		if filepath.Ext(path) == ".wal" {
			wals++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return size, wals
}

// TestMakeRunKeepsItsEtcdDataInTheRunDir: make run's script gives the agent
// its run directory's etcd/ (NETAGENT_RUN_DIR, default .run), not a new
// directory in /tmp that each run left behind. The agent is run with
// --version, so it stops before starting anything: what is checked is
// what the script decides.
func TestMakeRunKeepsItsEtcdDataInTheRunDir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("scripts/run-example.sh runs as root (it may install packages)")
	}
	before, _ := filepath.Glob("/tmp/netagent-etcd.*")
	runDir := t.TempDir()
	cmd := exec.Command("../../scripts/run-example.sh", "--version")
	cmd.Env = append(os.Environ(), "NETAGENT_RUN_DIR="+runDir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("run-example.sh --version: %v\n%s", err, out)
	}
	data := filepath.Join(runDir, "etcd")
	if !strings.Contains(string(out), "etcd data in "+data) {
		t.Errorf("run-example.sh does not say it uses %s:\n%s", data, out)
	}
	if st, err := os.Stat(data); err != nil || !st.IsDir() {
		t.Errorf("%s: %v", data, err)
	}
	after, _ := filepath.Glob("/tmp/netagent-etcd.*")
	if len(after) > len(before) {
		t.Errorf("run-example.sh left a directory in /tmp: before %q, after %q", before, after)
	}
}
