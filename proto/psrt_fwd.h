// Declarations of the generated wire types (psrt.pb.h, from psrt.proto) for public headers that
// name them without looking inside: protobuf types stay out of public headers outside core's
// messaging layer's codec (core/wire.h). A .cc that builds, reads or compares one
// includes psrt.pb.h (or core/wire.h) itself. Each such .cc sees both declarations, so a protoc
// that declared one differently (another enum base) fails to compile there rather than silently.
// Add a type here when a header needs it.
#pragma once

namespace psrt::wire {

enum Codec : int;  // protoc declares every enum with base int
class Header;
class PlaceRequest;
class PlaceReply;

}  // namespace psrt::wire
