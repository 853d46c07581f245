package vppconn

import (
	"encoding/binary"
	"errors"

	"go.fd.io/govpp/adapter"
	"go.fd.io/govpp/binapi/memclnt"
	"go.fd.io/govpp/codec"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeSocket listens on a unix socket and answers the first message of
// each client with answer (nil: closes the connection).
func fakeSocket(t *testing.T, answer []byte) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "vppsock")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	path := filepath.Join(dir, "api.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 4096)
			_, _ = c.Read(buf)
			if answer != nil {
				_, _ = c.Write(answer)
			}
			_ = c.Close()
		}
	}()
	return path
}

// Connecting to what is not VPP's API socket fails, saying why, and names
// the socket.
func TestConnectToSomethingElse(t *testing.T) {
	huge := make([]byte, frameHeaderSize)
	binary.BigEndian.PutUint32(huge[8:12], 1<<30)
	for _, tc := range []struct {
		name, want string
		answer     []byte
		path       string
	}{
		{name: "no socket", path: "/nonexistent/api.sock", want: "no such file"},
		{name: "closes at once", answer: nil, want: "sockclnt_create reply: EOF"},
		{name: "a huge frame", answer: huge, want: "not VPP's binary API"},
		{name: "a short frame", answer: []byte("HTTP/1.1 400 Bad Request\r\n"), want: "sockclnt_create reply"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.path
			if path == "" {
				path = fakeSocket(t, tc.answer)
			}
			c := newSockClient(path)
			err := c.Connect()
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("Connect: %v, want an error naming %s and saying %q", err, path, tc.want)
			}
			if err := c.Disconnect(); err != nil {
				t.Errorf("Disconnect after a failed Connect: %v", err)
			}
		})
	}
}

// A request too short to carry its header is refused, not sent.
func TestSendMsgTooShort(t *testing.T) {
	c := newSockClient("/nonexistent")
	if err := c.SendMsg(1, make([]byte, 9)); err == nil || !strings.Contains(err.Error(), "at least 10") {
		t.Fatalf("SendMsg of 9 bytes: %v", err)
	}
}

// The reply IDs are those of the table's reply messages GoVPP knows; a
// table without them gives none.
func TestReplyIDs(t *testing.T) {
	s, types := replyIDs(map[string]uint16{"control_ping_reply_f6b0b8ca": 7, "sw_interface_event_2d3d95a7": 9, "control_ping_51077d14": 8})
	if !s.has(7) || s.has(8) || s.has(9) {
		t.Errorf("reply IDs: 7 %v (want true), 8 %v, 9 %v (want false)", s.has(7), s.has(8), s.has(9))
	}
	if types[7] != "*memclnt.ControlPingReply" || len(types) != 1 {
		t.Errorf("reply types %v, want 7: *memclnt.ControlPingReply", types)
	}
}

// A client connects once: GoVPP's reconnect of it is refused (the Manager
// makes a new connection instead, see session.go).
func TestConnectOnce(t *testing.T) {
	msg, err := codec.DefaultCodec.EncodeMsg(&memclnt.SockclntCreateReply{Index: 3, Count: 1,
		MessageTable: []memclnt.MessageTableEntry{{Index: 7, Name: "control_ping_reply_f6b0b8ca"}}}, 16)
	if err != nil {
		t.Fatal(err)
	}
	c := newSockClient(fakeSocket(t, frame(nil, msg)))
	if err := c.Connect(); err != nil {
		t.Fatalf("Connect: %v", err)
	}
	if id, err := c.GetMsgID("control_ping_reply", "f6b0b8ca"); err != nil || id != 7 || c.index != 3 {
		t.Errorf("after the handshake: control_ping_reply %d %v, index %d; want 7, 3", id, err, c.index)
	}
	var unknown *adapter.UnknownMsgError
	if _, err := c.GetMsgID("control_ping", "51077d14"); !errors.As(err, &unknown) {
		t.Errorf("a message VPP did not list: %v, want an *adapter.UnknownMsgError", err)
	}
	if err := c.Connect(); !errors.Is(err, errNoReconnect) {
		t.Errorf("second Connect: %v, want errNoReconnect", err)
	}
	_ = c.Disconnect()
	if err := c.lostErr(); !errors.Is(err, ErrNotConnected) {
		t.Errorf("after Disconnect: %v, want ErrNotConnected", err)
	}
}
