package ifplugin_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
