package fixture

import (
	"net"
	"net/http"
	"os/exec"
	"testing"
)

func TestFixedListenAddresses(t *testing.T) {
	_, _ = net.Listen("tcp", "127.0.0.1:9100")                                      // want `fixed listen address "127.0.0.1:9100" \(argument of Listen\)`
	_, _ = net.Listen("tcp", ":8080")                                               // want `fixed listen address ":8080" \(argument of Listen\)`
	_, _ = net.ListenPacket("udp", "localhost:5353")                                // want `\(argument of ListenPacket\)`
	go func() { _ = http.ListenAndServe("0.0.0.0:80", nil) }()                      // want `\(argument of ListenAndServe\)`
	srv := &http.Server{Addr: "localhost:8443"}                                     // want `"localhost:8443" \(Addr\)`
	cfg := struct{ GRPCListen, MetricsListen string }{GRPCListen: "127.0.0.1:9090"} // want `\(GRPCListen\)`
	cfg.MetricsListen = "127.0.0.1:9100"                                            // want `\(MetricsListen\)`
	var grpcListen = "[::1]:9090"                                                   // want `\(grpcListen\)`
	args := []string{"--metrics-listen", "127.0.0.1:9100"}                          // want `\(--metrics-listen\)`
	t.Setenv("VCFSM_LISTEN", "127.0.0.1:9091")                                      // want `\(VCFSM_LISTEN\)`
	env := []string{"VCFSM_METRICS_LISTEN=127.0.0.1:9100"}                          // want `fixed listen address "VCFSM_METRICS_LISTEN=127.0.0.1:9100"`
	flagArg := "--http-listen=http://127.0.0.1:8080/v2"                             // want `fixed listen address`
	config := "data-dir: x\nlisten: 127.0.0.1:5000\n"                               // want `fixed listen address "listen: 127.0.0.1:5000"`
	_ = exec.Command("samplehook", "--listen", "127.0.0.1:8480")                    // want `\(--listen\)`
	_, _, _, _, _, _, _, _ = srv, cfg, grpcListen, args, env, flagArg, config, t
}

// Port 0, dial targets, and addresses that are only parsed or printed are
// not listen addresses.
func TestNotFixedListenAddresses(t *testing.T) {
	lis, _ := net.Listen("tcp", "127.0.0.1:0")
	_, _ = net.Listen("tcp", ":0")
	_, _ = http.Get("https://127.0.0.1:1/x.tar")
	cfg := struct{ GRPCListen, Target string }{GRPCListen: "127.0.0.1:0", Target: "127.0.0.1:9090"}
	args := []string{"--listen", "127.0.0.1:0", "--metrics-listen", "", "--data-dir", "127.0.0.1:9"}
	t.Setenv("VCFSM_LISTEN", "127.0.0.1:0")
	t.Setenv("VCFSM_RESOLVE", "a.ns.svc.cluster.local=127.0.0.1:1")
	rows := []string{"a.ns.svc.cluster.local=127.0.0.1:9443", "[::1]:9443", "oci://localhost:5000/arcturus:1.0"}
	doc := "`make run ARGS=\"--http-listen 127.0.0.1:18080\"` passes flags"
	logLine := `msg="serving metrics" listen=(http://[^ ]+/metrics)`
	addr := "127.0.0.1:" + "9100"
	_, _, _, _, _, _, _ = lis, cfg, args, rows, doc, logLine, addr
}
