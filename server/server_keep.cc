// A checkpoint that one server could not write (a full disk, a failing volume) while the
// others went on writing theirs: with checkpoint.keep each of the others pruned its older files
// and soon the one every server had, so the job could not resume at all, though it had exited 0
// promising "--resume goes back to the newest one written". From the first failure on, every
// process keeps all its checkpoints (server/checkpoint_writer.h, worker/encoder_checkpoint.h).
#include <spdlog/spdlog.h>

#include "server/server.h"

namespace psrt {

void Server::check_checkpoint_failures() {
  if (keep_told_ || checkpointer_.failed() == 0) return;
  keep_told_ = true;
  if (coordinator_) {
    keep_checkpoints("server 0");
    return;
  }
  spdlog::warn("this server could not write a checkpoint: it keeps all its checkpoints from now "
               "on (checkpoint.keep suspended), and so will the others once server 0 tells them");
  wire::Header h = make_header(self_, wire::HEARTBEAT);
  h.set_keep_checkpoints(true);
  control_->send(h);
  keeping_ = true;  // its writer keeps them already
}

void Server::keep_checkpoints(const std::string& cause) {
  if (keeping_) return;
  keeping_ = true;
  checkpointer_.keep_all();
  spdlog::warn("{} could not write a checkpoint: every process keeps all its checkpoints from "
               "now on (checkpoint.keep suspended), so that the newest one they all have stays",
               cause);
  wire::Header h = make_header(self_, wire::HEARTBEAT);
  h.set_keep_checkpoints(true);
  broadcast(h);
}

void Server::on_keep_checkpoints() {
  if (keeping_) return;
  keeping_ = true;
  checkpointer_.keep_all();
  spdlog::warn("a server could not write a checkpoint: this one keeps all its checkpoints from "
               "now on (checkpoint.keep suspended), so that the newest one every server has "
               "stays");
}

}  // namespace psrt
