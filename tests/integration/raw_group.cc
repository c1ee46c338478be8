#include "tests/integration/raw_group.h"

#include "tests/integration/raw_job.h"

namespace psrt::test {

std::vector<zmq::message_t> RawGroup::frames() const {
  std::vector<std::vector<uint8_t>> bytes;
  for (std::size_t i = 0; i < grads.size(); ++i) {
    const std::size_t f = header.members(int(i)).frame();
    if (bytes.size() <= f) bytes.resize(f + 1);
    const auto* b = reinterpret_cast<const uint8_t*>(grads[i].data());
    bytes[f].insert(bytes[f].end(), b, b + grads[i].size() * sizeof(float));
  }
  std::vector<zmq::message_t> out;
  for (const auto& b : bytes) out.emplace_back(b.data(), b.size());
  return out;
}

RawGroup& RawGroup::packed() {
  for (auto& m : *header.mutable_members()) m.set_frame(0);
  return *this;
}

RawGroup group_push(RawClient& w, const std::vector<uint64_t>& sizes,
                    const std::vector<uint32_t>& keys, uint64_t iteration, std::mt19937& rng) {
  RawGroup g;
  uint64_t elements = 0;
  for (uint32_t k : keys) g.grads.push_back(dyadic(sizes.at(k), rng));
  g.header = w.tensor(wire::PUSH, keys[0], 0, sizes[keys[0]], iteration, &g.grads[0]);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    auto* m = g.header.add_members();
    m->set_key(keys[i]);
    m->set_offset(0);
    m->set_length(sizes[keys[i]]);
    m->set_payload_bytes(sizes[keys[i]] * 4);
    m->set_codec(wire::CODEC_NONE);
    m->set_frame(uint32_t(i));  // a frame each; packed() puts them in one
    elements += sizes[keys[i]];
  }
  g.header.set_num_elements(elements);
  g.header.set_payload_bytes(elements * 4);
  return g;
}

}  // namespace psrt::test
