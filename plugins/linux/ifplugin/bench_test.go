package ifplugin_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	linuxif "github.com/netagent-io/netagent/proto/linux/interfaces"
	linuxns "github.com/netagent-io/netagent/proto/linux/namespace"
)

// BenchmarkVethPairs100: 100 veth pairs (each end with one address) in one
// namespace: create, full resync of the in-sync kernel, delete; ms-create,
// ms-resync, ms-delete per run. ip-batch-ms-create and ip-batch-ms-delete
// time the same links and addresses made by `ip -batch` for comparison.
func BenchmarkVethPairs100(b *testing.B) {
	needRoot(b)
	const pairs = 100
	name := fmt.Sprintf("ifp-bench-%d", os.Getpid())
	ns := &linuxns.NetNamespace{Type: linuxns.NetNamespace_NSID, Reference: name}
	b.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	var values []proto.Message
	for i := range pairs {
		for end := range 2 {
			values = append(values, &linuxif.Interface{
				Name: fmt.Sprintf("bv%d-%d", i, end), Type: linuxif.Interface_VETH, Enabled: true, Namespace: ns,
				IpAddresses: []string{fmt.Sprintf("10.%d.%d.%d/24", 100+end, i, 1+end)},
				Link:        &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: fmt.Sprintf("bv%d-%d", i, 1-end)}},
			})
		}
	}
	var create, resync, del, ipCreate, ipDel time.Duration
	for range b.N {
		a := newAgent(b)
		start := time.Now()
		a.mustCommit(values...)
		create += time.Since(start)
		start = time.Now()
		if _, err := a.commit(api.TxnOptions{Resync: api.FullResync}, values...); err != nil {
			b.Fatal(err)
		}
		resync += time.Since(start)
		start = time.Now()
		txn := a.s.StartNBTransaction()
		for _, v := range values {
			txn.SetValue("config/linux/interfaces/v2/interface/"+v.(*linuxif.Interface).GetName(), nil)
		}
		if _, err := txn.Commit(context.Background(), api.TxnOptions{}); err != nil {
			b.Fatal(err)
		}
		del += time.Since(start)
		a.close()

		// The same with ip -batch.
		var add, rm strings.Builder
		for i := range pairs {
			fmt.Fprintf(&add, "link add bv%d-0 type veth peer name bv%d-1\n", i, i)
			for end := range 2 {
				fmt.Fprintf(&add, "addr add 10.%d.%d.%d/24 dev bv%d-%d\nlink set bv%d-%d up\n", 100+end, i, 1+end, i, end, i, end)
			}
			fmt.Fprintf(&rm, "link del bv%d-0\n", i)
		}
		dir := b.TempDir()
		addFile, rmFile := filepath.Join(dir, "add"), filepath.Join(dir, "rm")
		if err := os.WriteFile(addFile, []byte(add.String()), 0o600); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(rmFile, []byte(rm.String()), 0o600); err != nil {
			b.Fatal(err)
		}
		// The agent removed the namespace it created with its last
		// interface.
		_ = exec.Command("ip", "netns", "add", name).Run()
		start = time.Now()
		run(b, "ip", "-n", name, "-batch", addFile)
		ipCreate += time.Since(start)
		start = time.Now()
		run(b, "ip", "-n", name, "-batch", rmFile)
		ipDel += time.Since(start)
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
	b.ReportMetric(ms(create), "ms-create")
	b.ReportMetric(ms(resync), "ms-resync")
	b.ReportMetric(ms(del), "ms-delete")
	b.ReportMetric(ms(ipCreate), "ip-batch-ms-create")
	b.ReportMetric(ms(ipDel), "ip-batch-ms-delete")
}

// BenchmarkVethPairDeletes: 500 veth pairs (both ends values of the
// agent, up, no addresses) in one namespace the agent creates, created and
// then deleted by the agent in one transaction each (the deletes are two
// waves of the scheduler, all first ends then all second ends, each a batch
// that the interface descriptor deletes as one link group per namespace;
// the namespace goes with the last link). The references, in the same
// iteration: the same pairs created by `ip -batch` (link add, then alias
// and up per end), deleted by the fastest `ip` ways: `ip -batch` of `link
// set ... group N` then `ip link delete group N` (timed together, and the
// delete alone), and, the pairs made again, `ip netns del` of their
// namespace (the kernel deletes the links after the command returned: a
// lower bound); `ip -batch` of `link del` one by one once (only with
// -short unset: ~9 s). Interleaved per iteration; medians, spreads (min,
// max) and the ratios of the agent's medians to the references'.
func BenchmarkVethPairDeletes(b *testing.B) {
	needRoot(b)
	const pairs = 500
	name := fmt.Sprintf("ifp-vdel-%d", os.Getpid())
	ns := &linuxns.NetNamespace{Type: linuxns.NetNamespace_NSID, Reference: name}
	b.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	var values []proto.Message
	var add, group, del strings.Builder
	for i := range pairs {
		for end := range 2 {
			values = append(values, &linuxif.Interface{
				Name: fmt.Sprintf("vd%d-%d", i, end), Type: linuxif.Interface_VETH, Enabled: true, Namespace: ns,
				Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: fmt.Sprintf("vd%d-%d", i, 1-end)}},
			})
		}
		fmt.Fprintf(&add, "link add vd%d-0 type veth peer name vd%d-1\n", i, i)
		for end := range 2 {
			fmt.Fprintf(&add, "link set vd%d-%d alias netagent/vd%d-%d up\n", i, end, i, end)
		}
		fmt.Fprintf(&group, "link set vd%d-0 group 77\n", i)
		fmt.Fprintf(&del, "link del vd%d-0\n", i)
	}
	dir := b.TempDir()
	write := func(file, s string) string {
		path := filepath.Join(dir, file)
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			b.Fatal(err)
		}
		return path
	}
	addFile, groupFile, delFile := write("add", add.String()), write("group", group.String()), write("del", del.String())
	timed := func(args ...string) time.Duration {
		t0 := time.Now()
		run(b, args...)
		return time.Since(t0)
	}
	var agentAdd, agent, ipAdd, ipGroup, ipGroupDel, ipNetnsDel, ipOneByOne []time.Duration
	for range b.N {
		a := newAgent(b)
		start := time.Now()
		a.mustCommit(values...)
		agentAdd = append(agentAdd, time.Since(start))
		start = time.Now()
		txn := a.s.StartNBTransaction()
		for _, v := range values {
			txn.SetValue("config/linux/interfaces/v2/interface/"+v.(*linuxif.Interface).GetName(), nil)
		}
		if _, err := txn.Commit(context.Background(), api.TxnOptions{}); err != nil {
			b.Fatal(err)
		}
		agent = append(agent, time.Since(start))
		a.close()
		if out, err := exec.Command("ip", "netns", "list").Output(); err != nil || strings.Contains(string(out), name) {
			b.Fatalf("the agent left its namespace %s (ip netns list: %s, %v)", name, out, err)
		}

		run(b, "ip", "netns", "add", name)
		ipAdd = append(ipAdd, timed("ip", "-n", name, "-batch", addFile))
		set := timed("ip", "-n", name, "-batch", groupFile)
		d := timed("ip", "-n", name, "link", "delete", "group", "77")
		ipGroup, ipGroupDel = append(ipGroup, set+d), append(ipGroupDel, d)
		if !testing.Short() && len(ipOneByOne) == 0 {
			run(b, "ip", "-n", name, "-batch", addFile)
			ipOneByOne = append(ipOneByOne, timed("ip", "-n", name, "-batch", delFile))
		}
		run(b, "ip", "-n", name, "-batch", addFile)
		ipNetnsDel = append(ipNetnsDel, timed("ip", "netns", "del", name))
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	x := func(a, b []time.Duration) float64 { return float64(median(a)) / float64(median(b)) }
	b.ReportMetric(ms(median(agent)), "agent-del-ms")
	b.ReportMetric(ms(slices.Min(agent)), "agent-del-min-ms")
	b.ReportMetric(ms(slices.Max(agent)), "agent-del-max-ms")
	b.ReportMetric(ms(median(ipGroup)), "ip-group-set+del-ms")
	b.ReportMetric(ms(median(ipGroupDel)), "ip-group-del-ms")
	b.ReportMetric(ms(slices.Min(ipGroupDel)), "ip-group-del-min-ms")
	b.ReportMetric(ms(slices.Max(ipGroupDel)), "ip-group-del-max-ms")
	b.ReportMetric(ms(median(ipNetnsDel)), "ip-netns-del-ms")
	b.ReportMetric(x(agent, ipGroup), "x-ip-group")
	b.ReportMetric(x(agent, ipGroupDel), "x-ip-group-del")
	b.ReportMetric(x(agent, ipNetnsDel), "x-ip-netns-del")
	if len(ipOneByOne) > 0 {
		b.ReportMetric(ms(ipOneByOne[0]), "ip-batch-link-del-ms")
	}
	b.ReportMetric(ms(median(agentAdd)), "agent-add-ms")
	b.ReportMetric(ms(slices.Min(agentAdd)), "agent-add-min-ms")
	b.ReportMetric(ms(slices.Max(agentAdd)), "agent-add-max-ms")
	b.ReportMetric(ms(median(ipAdd)), "ip-batch-add-ms")
	b.ReportMetric(ms(slices.Min(ipAdd)), "ip-batch-add-min-ms")
	b.ReportMetric(ms(slices.Max(ipAdd)), "ip-batch-add-max-ms")
	b.ReportMetric(x(agentAdd, ipAdd), "x-add-ip-batch")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
