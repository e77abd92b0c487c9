#include "core/workflow/read_latents.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "core/base/json_reader.hpp"
#include "core/workflow/loaded_image.hpp"

namespace headroom::workflow {

namespace {

// The node a size input's value starts at, and its output slot: past value nodes (PrimitiveInt) whose own widget
// is linked, because ComfyUI runs the linked value and the stored copy is stale (GetImageSize -> PrimitiveInt ->
// EmptyLatentImage).
std::pair<const Node*, int> size_origin(const Graph& g, const Input* in) {
  const Node* from = in && in->from_node ? g.node(*in->from_node) : nullptr;
  int slot = in ? in->from_slot : 0;
  for (int hops = 0; from && hops < 16; ++hops) {
    const ComfyNode* info = node_info(from->type);
    if (!info || slot < 0 || static_cast<std::size_t>(slot) >= info->value_outputs.size() ||
        info->value_outputs[slot].empty())
      break;
    const Input* through = from->input(info->value_outputs[slot]);
    if (!through || !through->from_node) break;
    slot = through->from_slot;
    from = g.node(*through->from_node);
  }
  return {from, slot};
}

// The size of the image `n` (a latent_from_image or size_from_image node) takes, traced back to the node that
// sets it; a loaded image's file is read when the request gave ComfyUI's input folder.
ImageSize traced_image_size(const ReaderState& st, const Node& n) {
  return image_size_of(
      st.g, n, [&st](const Node& m, const std::string& w) { return integer(resolved_value(st.g, m, w)); },
      [&st](const Node& m, const std::string& w) -> std::optional<double> {
        const auto v = resolved_value(st.g, m, w);
        if (!v || !v->is_number()) return std::nullopt;
        return v->get<double>();
      },
      [&st](const Node& m, const std::string& w) -> std::optional<std::string> {
        const auto v = resolved_value(st.g, m, w);
        if (!v || !v->is_string()) return std::nullopt;
        return v->get<std::string>();
      },
      st.opt.input_dir.empty() ? LoadedImageSize{} : [&st](const Node& m, const std::string& w) {
        return loaded_image_size(st.g, m, w, st.opt.input_dir);
      });
}

// A latent side that ComfyUI computes from an input image (GetImageSize's width and height outputs): the
// traced image's side, or unknown (said in `unknown`) — never the stale copy the latent node stores, which is
// whatever the template's author last saw.
// A size known only in part says so once: its note (how it is sized and why), then each side names its origin.
std::optional<long long> side_from_image(ReaderState& st, const Node& origin, int slot,
                                         std::optional<UnknownNode>& unknown, std::string& inexact) {
  const ImageSize s = traced_image_size(st, origin);
  if (s.origin == SizeOrigin::PixelCount) inexact = ", the side of a square of its pixel count (its aspect is unknown; size_origin pixel_count)";
  if (s.origin == SizeOrigin::AtMost) inexact = ", an upper bound of it (size_origin at_most)";
  auto& notes = st.notes();
  if (!s.note.empty() && std::find(notes.begin(), notes.end(), s.note) == notes.end()) notes.push_back(s.note);
  if (!s.known()) {
    unknown = UnknownNode{s.node_id, s.node_type, s.why};
    return std::nullopt;
  }
  if (slot == 0) return *s.width;
  if (slot == 1) return *s.height;
  return std::nullopt;
}

// A latent's width and height: literals, or the traced size of the input image they are computed from
// (GetImageSize). False (said in the notes) when a side is a bad value or follows an image of unknown size.
bool read_sides(ReaderState& st, const Node& n, const LatentSize& size, const std::optional<WidgetRef>& w,
                const std::optional<WidgetRef>& h, std::optional<long long>& wi, std::optional<long long>& hi,
                bool& traced) {
  const std::pair<const std::string*, const std::optional<WidgetRef>*> sizes[] = {{&size.width, &w},
                                                                                  {&size.height, &h}};
  for (const auto& [name, r] : sizes) {
    const Input* in = n.input(*name);
    const auto [origin, slot] = size_origin(st.g, in);
    if (origin && node_info(origin->type) && node_info(origin->type)->size_from_image) {
      std::optional<UnknownNode> unknown;
      std::string inexact;  // how the side is known where it is not exactly (a pixel count, a bound)
      const auto side = side_from_image(st, *origin, slot, unknown, inexact);
      if (!side) {
        const UnknownNode u = unknown.value_or(UnknownNode{origin->id, origin->type, "an output Headroom does not size"});
        if (!st.image_unknown) st.image_unknown = u;
        st.latent_unknown[n.id] = u;
        st.image_sized_latent = true;
        st.notes().push_back(n.type + " #" + n.id + ": " + *name + " comes from an input image (" + origin->type +
                             " #" + origin->id + ") whose size follows " + u.type + " #" + u.id + ", " + u.why +
                             "; size unknown (the workflow's stored copy is not what ComfyUI runs)");
        return false;
      }
      st.notes().push_back(n.type + " #" + n.id + ": " + *name + " is " + std::to_string(*side) +
                           " px, the size of the input image (" + origin->type + " #" + origin->id + ")" + inexact);
      (r == &w ? wi : hi) = *side;
      traced = true;
      continue;
    }
    if (!*r) continue;  // no literal: linked to a node that computes it (reported by the caller)
    // A literal that is not a positive whole number is a bad value, not a computed one: say which.
    auto value = integer((*r)->value);
    const Node* from = in && in->from_node ? st.g.node(*in->from_node) : nullptr;
    const ComfyNode* from_info = from ? node_info(from->type) : nullptr;
    if ((value && *value > 0) || (from && !(from_info && !from_info->value_outputs.empty()))) continue;
    st.notes().push_back(n.type + " #" + n.id + ": " + *name + " is " + json_preview((*r)->value, 40) +
                         ", expected a whole number of pixels from 16 to 16384; size unknown");
    return false;
  }
  return true;
}

}  // namespace

void read_latent(ReaderState& st, const Node& n, const ComfyNode& info) {
  ++st.latent_nodes;
  const LatentSize& size = *info.latent;
  auto w = st.ref(n, size.width), h = st.ref(n, size.height), b = st.ref(n, size.batch);
  auto len = size.length.empty() ? std::nullopt : st.ref(n, size.length);
  std::optional<long long> wi, hi;
  if (w) wi = integer(w->value);
  if (h) hi = integer(h->value);
  bool traced = false;  // a side follows the input image: rewriting the stored copy would change nothing
  if (!read_sides(st, n, size, w, h, wi, hi, traced)) return;
  if (!wi.has_value() || !hi.has_value() || *wi <= 0 || *hi <= 0) {
    st.notes().push_back(n.type + " #" + n.id + ": width/height are computed by other nodes; size unknown");
    return;
  }
  long long frames = len ? integer(len->value).value_or(1) : 1;
  const auto layers = size.layers.empty() ? std::nullopt : st.ref(n, size.layers);
  if (layers) {
    // The composite image and each layer are one latent frame: layers + 1 images in one sequence.
    const auto count = integer(layers->value);
    if (!count || *count < 0) {
      st.notes().push_back(n.type + " #" + n.id + ": " + size.layers + " is " + json_preview(layers->value, 40) +
                           ", expected a whole number of layers from 0; size unknown");
      return;
    }
    frames = *count + 1;
    st.notes().push_back(n.type + " #" + n.id + ": " + std::to_string(*count) + " layers and the composite image, " +
                         std::to_string(frames) + " latent frames sampled in one sequence");
  }
  long long batch = b ? integer(b->value).value_or(1) : 1;
  // ComfyUI caps sizes at 16384 px and batches at 4096; beyond 2^20 the product below could overflow.
  constexpr long long kSane = 1 << 20;
  if (*wi > kSane || *hi > kSane || frames < 1 || frames > kSane || batch < 1 || batch > kSane) {
    st.notes().push_back(n.type + " #" + n.id + ": width/height/length/batch_size out of range; ignored");
    return;
  }
  st.latent_shapes[n.id] = {static_cast<int>(*wi), static_cast<int>(*hi), static_cast<int>(frames), static_cast<int>(batch), 0};
  long long pixels = *wi * *hi * frames * batch;
  if (pixels <= st.best_pixels) return;  // the largest latent sets the peak
  st.best_pixels = pixels;
  st.info.job.width = static_cast<int>(*wi);
  st.info.job.height = static_cast<int>(*hi);
  st.info.job.frames = static_cast<int>(frames);
  st.info.job.batch = static_cast<int>(batch);
  st.info.latent_node = n.type;
  st.info.size_known = true;
  st.info.is_video = len.has_value();
  st.info.width = w && !traced ? std::vector<WidgetRef>{*w} : std::vector<WidgetRef>{};
  st.info.height = h && !traced ? std::vector<WidgetRef>{*h} : std::vector<WidgetRef>{};
  st.info.length = len ? std::vector<WidgetRef>{*len} : std::vector<WidgetRef>{};
  st.info.batch = b ? std::vector<WidgetRef>{*b} : std::vector<WidgetRef>{};
  if (!info.latent_note.empty()) st.notes().push_back(info.latent_note);
}

namespace {

// The batch widget of a 1-D latent (audio, shape tokens); batch_size when the rule names none.
std::optional<WidgetRef> batch_ref(const ReaderState& st, const Node& n, const std::string& batch) {
  return st.ref(n, batch.empty() ? std::string("batch_size") : batch);
}

// The widget giving a 1-D latent's length, or none (said in the notes) when other nodes compute it.
std::optional<WidgetRef> length_ref(ReaderState& st, const Node& n, const std::string& length) {
  auto r = st.ref(n, length);
  if (!r) st.notes().push_back(n.type + " #" + n.id + ": " + length + " is computed by other nodes; size unknown");
  return r;
}

// A 1-D latent that sets the job's size: its batch, the node it came from, and the batch widget to rewrite.
void take_one_dim_size(ReaderState& st, const Node& n, const std::optional<WidgetRef>& b, long long batch) {
  st.info.job.batch = static_cast<int>(batch);
  st.info.latent_node = n.type;
  st.info.size_known = true;
  st.info.batch = b ? std::vector<WidgetRef>{*b} : std::vector<WidgetRef>{};
}

}  // namespace

void read_audio_latent(ReaderState& st, const Node& n, const ComfyNode& info) {
  ++st.latent_nodes;
  const AudioLatentSize& size = *info.audio_latent;
  const auto b = batch_ref(st, n, size.batch);
  const auto sec = length_ref(st, n, size.seconds);
  if (!sec) return;
  const double seconds = sec->value.is_number() ? sec->value.get<double>() : -1;
  long long batch = b ? integer(b->value).value_or(1) : 1;
  if (!(seconds > 0 && seconds <= 3600) || batch < 1 || batch > 4096) {
    st.notes().push_back(n.type + " #" + n.id + ": " + size.seconds + " is " + json_preview(sec->value, 40) + ", batch " +
                      std::to_string(batch) + ", expected seconds from 0 to 3600 and a batch from 1 to 4096; size unknown");
    return;
  }
  st.latent_shapes[n.id] = {0, 0, 1, static_cast<int>(batch), seconds};
  if (st.info.size_known && seconds * batch <= st.info.job.seconds * st.info.job.batch) return;  // the longest clip sets the peak
  st.info.job.seconds = seconds;
  take_one_dim_size(st, n, b, batch);
}

void read_token_latent(ReaderState& st, const Node& n, const ComfyNode& info) {
  ++st.latent_nodes;
  const TokenLatentSize& size = *info.token_latent;
  const auto b = batch_ref(st, n, size.batch);
  const auto t = length_ref(st, n, size.tokens);
  if (!t) return;
  const auto tokens = integer(t->value);
  const long long batch = b ? integer(b->value).value_or(1) : 1;
  if (!tokens || *tokens < 1 || *tokens > 65536 || batch < 1 || batch > 4096) {
    st.notes().push_back(n.type + " #" + n.id + ": " + size.tokens + " is " + json_preview(t->value, 40) + ", batch " +
                         std::to_string(batch) + ", expected 1 to 65536 tokens and a batch from 1 to 4096; size unknown");
    return;
  }
  LatentShape shape;
  shape.batch = static_cast<int>(batch);
  shape.tokens = static_cast<int>(*tokens);
  st.latent_shapes[n.id] = shape;
  if (st.info.size_known && *tokens * batch <= static_cast<long long>(st.info.job.tokens) * st.info.job.batch) return;
  st.info.job.tokens = shape.tokens;
  take_one_dim_size(st, n, b, batch);
  st.notes().push_back(n.type + " #" + n.id + ": a latent of " + std::to_string(*tokens) + " shape tokens");
}

void read_image_latent(ReaderState& st, const Node& n, const ComfyNode& info) {
  st.image_sized_latent = true;
  st.notes().push_back(n.type + " #" + n.id + info.latent_from_image);
  const ImageSize s = traced_image_size(st, n);
  if (!s.known()) {
    if (!st.image_unknown) st.image_unknown = UnknownNode{s.node_id, s.node_type, s.why};
    st.latent_unknown[n.id] = UnknownNode{s.node_id, s.node_type, s.why};
    return;
  }
  if (!s.note.empty()) st.notes().push_back(s.note);
  st.latent_shapes[n.id] = {*s.width, *s.height, 1, 1, 0};
  if (s.node_id != n.id)  // the Kontext rescale sets its own size, and its note says so
    st.notes().push_back(n.type + " #" + n.id + ": the image is " + std::to_string(*s.width) + "x" +
                      std::to_string(*s.height) + " px, set by " + s.node_type + " #" + s.node_id);
  const auto pixels = [](const ImageSize& i) { return static_cast<long long>(*i.width) * *i.height; };
  if (!st.image_size || pixels(s) > pixels(*st.image_size)) {
    st.image_size = s;
    st.image_latent_type = n.type;
  }
}

void size_from_image_latent(ReaderState& st) {
  if (st.info.size_known || !st.image_size) return;
  st.info.job.width = *st.image_size->width;
  st.info.job.height = *st.image_size->height;
  st.info.job.frames = 1;
  st.info.job.batch = 1;
  st.info.latent_node = st.image_latent_type;
  st.info.size_known = true;
  // No widget refs: a preset that rewrote the latent's size would have to rewrite the image's.
}

}  // namespace headroom::workflow
