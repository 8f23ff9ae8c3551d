// Pictures in the chat: the file picker a picture is chosen and uploaded with, and the chip
// above the input that shows the picture waiting to go with the next message.

import { api } from "../../api.js";
import { formWith, h, iconButton } from "../../dom.js";
import { reportError } from "../../errors.js";
import { t } from "../../i18n.js";

/** Let the person pick a picture file, upload it, and hand the stored picture to `then`. */
export function choosePicture(then) {
  const picker = h("input", { type: "file", accept: "image/png,image/jpeg,image/gif,image/webp", hidden: true });
  picker.addEventListener("change", async () => {
    const file = picker.files?.[0];
    picker.remove();
    if (!file) return;
    try {
      await then(await api.upload("/images", formWith({ file })));
    } catch (error) {
      reportError(error);
    }
  });
  document.body.append(picker);
  picker.click();
}

/** The chip and its attach button; `pending()` is the picture to send (or null). */
export function pictureChip() {
  let pending = null;
  const chip = h("div", { class: "picture-chip", hidden: true, id: "pending-picture" });
  const button = iconButton(t("chat.attach_picture"), "picture", () =>
    choosePicture(async (picture) => {
      pending = picture;
      show();
    }), { attrs: { id: "attach-picture" } });

  function show() {
    chip.replaceChildren();
    chip.hidden = !pending;
    if (!pending) return;
    chip.append(
      h("img", { src: pending.url, alt: t("chat.picture"), class: "thumb" }),
      h("span", { text: t("chat.picture_size", { w: pending.width, h: pending.height }) }),
      iconButton(t("chat.picture_remove"), "close", clear, { class: "remove-picture" }),
    );
  }

  function clear() {
    pending = null;
    show();
  }

  return { element: chip, button, pending: () => pending, clear };
}
