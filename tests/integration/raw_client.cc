#include "tests/integration/raw_client.h"

#include <algorithm>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstring>

#include "core/transport.h"

namespace psrt::test {

RawClient::RawClient(zmq::context_t& ctx, const std::string& endpoint, const std::string& identity,
                     Sender self, const SocketOptions& options)
    : socket_(make_dealer(ctx, identity, options)), self_(std::move(self)) {
  socket_.set(zmq::sockopt::linger, 0);
  socket_.connect(endpoint);
}

void RawClient::send_frames(std::vector<zmq::message_t> frames) {
  for (std::size_t i = 0; i < frames.size(); ++i) {
    socket_.send(frames[i],
                 i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
  }
}

void RawClient::send(const wire::Header& h, std::vector<zmq::message_t> payload) {
  REQUIRE(send_envelope(socket_, nullptr, h, std::move(payload)));
}

std::optional<Reply> RawClient::recv(double seconds) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(seconds));
  Envelope env;
  while (true) {
    if (recv_envelope(socket_, env, false)) {
      Reply r;
      WireError err;
      INFO("reply failed decode_header: " << err.message);
      REQUIRE(decode_header(env.header, env.payload, self_.job_id, r.header, err));
      if (r.header.type() == wire::HEARTBEAT) continue;
      r.payload = std::move(env.payload);
      return r;
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return std::nullopt;
    zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, left);
  }
}

wire::Header RawClient::tensor(wire::MsgType type, uint32_t key, uint64_t offset, uint64_t length,
                               uint64_t iteration, const std::vector<float>* values) {
  wire::Header h = make_header(self_, type);
  h.set_key(key);
  h.set_offset(offset);
  h.set_length(length);
  h.set_iteration(iteration);
  h.set_codec(wire::CODEC_NONE);
  h.set_seq(next_seq());
  if (values) {
    h.set_num_elements(values->size());
    h.set_payload_bytes(values->size() * sizeof(float));
  }
  return h;
}

std::vector<zmq::message_t> RawClient::frame_of(const std::vector<float>& values) {
  std::vector<zmq::message_t> out;
  out.emplace_back(values.data(), values.size() * sizeof(float));
  return out;
}

std::vector<float> floats_of(const zmq::message_t& frame) {
  std::vector<float> v(frame.size() / sizeof(float));
  std::memcpy(v.data(), frame.data(), v.size() * sizeof(float));
  return v;
}

ServerProc::ServerProc(const std::string& yaml, const std::vector<std::string>& extra_args) {
  dir = temp_dir("server");
  write_file(dir + "/job.yaml", yaml);
  std::vector<std::string> argv{bin("psrt-server"), "--config", dir + "/job.yaml", "--rank", "0",
                                "--set", "cluster.coordinator=tcp://127.0.0.1:0"};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  proc = std::make_unique<Proc>("server", argv);
  INFO(proc->output());
  REQUIRE(proc->wait_line("PSRT_LISTENING ", 30));
  const std::string& out = proc->output();
  const auto at = out.find("PSRT_LISTENING ") + 15;
  endpoint = out.substr(at, out.find('\n', at) - at);
  REQUIRE(endpoint.rfind("tcp://127.0.0.1:", 0) == 0);
}

Reply expect(RawClient& w, wire::MsgType type) {
  auto r = w.recv(15);
  REQUIRE(r);
  INFO("got " << wire::MsgType_Name(r->header.type()) << ": " << r->header.error().message());
  REQUIRE(r->header.type() == type);
  return std::move(*r);
}

Reply expect_params_acking(RawClient& w, uint64_t push_seq) {
  Reply r = expect(w, wire::PARAMS);
  const auto& acks = r.header.acks();
  CHECK(std::find(acks.begin(), acks.end(), push_seq) != acks.end());
  return r;
}

std::string expect_error(RawClient& w, ErrorCode code) {
  const Reply r = expect(w, wire::ERROR);
  INFO("error: " << r.header.error().message());
  CHECK(r.header.error().code() == uint32_t(code));
  CHECK_FALSE(r.header.error().message().empty());
  return r.header.error().message();
}

}  // namespace psrt::test
