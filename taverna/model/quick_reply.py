"""Quick Reply sets: buttons that send text or run scripts (formats-extensions.md §2)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from taverna.model.document import JsonInt, STDocument


class QuickReplyLink(STDocument):
    """A context-menu link from a quick reply to another set."""

    set: str = ""
    is_chained: bool = Field(False, alias="isChained")


class QuickReplyTool(STDocument):
    """taverna's own: the reply is also a function tool the model may call.

    The model is told `name`, `description` and the JSON schema `parameters`; a call
    runs the reply's script with each argument as a scoped variable (`{{var::name}}`),
    and the script's result is the tool's answer. SillyTavern ignores the key.
    """

    name: str = ""
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=dict)


class QuickReply(STDocument):
    """One quick reply of a version-2 set."""

    id: JsonInt = 0
    icon: str = ""
    show_label: bool = Field(False, alias="showLabel")
    label: str = ""
    title: str = ""
    message: str = ""
    context_list: list[QuickReplyLink] = Field(default_factory=list, alias="contextList")
    prevent_auto_execute: bool = Field(True, alias="preventAutoExecute")
    is_hidden: bool = Field(False, alias="isHidden")
    execute_on_startup: bool = Field(False, alias="executeOnStartup")
    execute_on_user: bool = Field(False, alias="executeOnUser")
    execute_on_ai: bool = Field(False, alias="executeOnAi")
    execute_on_chat_change: bool = Field(False, alias="executeOnChatChange")
    execute_on_group_member_draft: bool = Field(False, alias="executeOnGroupMemberDraft")
    execute_on_new_chat: bool = Field(False, alias="executeOnNewChat")
    automation_id: str = Field("", alias="automationId")
    # taverna's own keys (SillyTavern ignores them): the events on which the reply runs by
    # itself (`EventName` values), and the tool it defines
    execute_on_events: list[str] | None = Field(None, alias="executeOnEvents")
    tool: QuickReplyTool | None = None


class QuickReplySet(STDocument):
    """A version-2 Quick Reply set (`QuickReplies/<name>.json`)."""

    version: JsonInt = 2
    name: str = ""
    disable_send: bool = Field(False, alias="disableSend")
    place_before_input: bool = Field(False, alias="placeBeforeInput")
    inject_input: bool = Field(False, alias="injectInput")
    color: str = "transparent"
    only_border_color: bool = Field(False, alias="onlyBorderColor")
    qr_list: list[QuickReply] = Field(default_factory=list, alias="qrList")
    id_index: JsonInt = Field(0, alias="idIndex")


class LegacyContextMenuItem(STDocument):
    """A version-1 slot's context-menu link."""

    preset: str = ""
    chain: bool = False


class LegacyQuickReplySlot(STDocument):
    """One slot of a version-1 set."""

    mes: str = ""
    label: str = ""
    title: str = ""
    enabled: bool = True
    hidden: bool = False
    auto_execute_app_startup: bool = Field(False, alias="autoExecute_appStartup")
    auto_execute_user_message: bool = Field(False, alias="autoExecute_userMessage")
    auto_execute_bot_message: bool = Field(False, alias="autoExecute_botMessage")
    auto_execute_chat_load: bool = Field(False, alias="autoExecute_chatLoad")
    auto_execute_group_member_draft: bool = Field(False, alias="autoExecute_groupMemberDraft")
    auto_execute_new_chat: bool = Field(False, alias="autoExecute_newChat")
    automation_id: str = Field("", alias="automationId")
    context_menu: list[LegacyContextMenuItem] = Field(default_factory=list, alias="contextMenu")


class LegacyQuickReplySet(STDocument):
    """A version-1 Quick Reply set (no `version`, `quickReplySlots`, §2.2)."""

    name: str = ""
    quick_reply_enabled: bool = Field(False, alias="quickReplyEnabled")
    quick_reply_slots: list[LegacyQuickReplySlot] = Field(
        default_factory=list, alias="quickReplySlots"
    )
    number_of_slots: JsonInt | None = Field(None, alias="numberOfSlots")
    selected_preset: str | None = Field(None, alias="selectedPreset")
    quick_action_enabled: bool = Field(False, alias="quickActionEnabled")
    place_before_input_enabled: bool = Field(False, alias="placeBeforeInputEnabled")
    auto_input_inject: bool = Field(False, alias="AutoInputInject")

    def migrated(self) -> QuickReplySet:
        """The set in version-2 form, as SillyTavern migrates it on load (§2.2)."""
        replies = [
            QuickReply(
                id=index + 1,
                icon="",
                show_label=False,
                prevent_auto_execute=True,
                label=slot.label,
                title=slot.title,
                message=slot.mes,
                is_hidden=slot.hidden,
                execute_on_startup=slot.auto_execute_app_startup,
                execute_on_user=slot.auto_execute_user_message,
                execute_on_ai=slot.auto_execute_bot_message,
                execute_on_chat_change=slot.auto_execute_chat_load,
                execute_on_group_member_draft=slot.auto_execute_group_member_draft,
                execute_on_new_chat=slot.auto_execute_new_chat,
                automation_id=slot.automation_id,
                context_list=[
                    QuickReplyLink(set=item.preset, is_chained=item.chain)
                    for item in slot.context_menu
                ],
            )
            for index, slot in enumerate(self.quick_reply_slots)
        ]
        return QuickReplySet(
            version=2,
            name=self.name,
            disable_send=self.quick_action_enabled,
            place_before_input=self.place_before_input_enabled,
            inject_input=self.auto_input_inject,
            qr_list=replies,
            id_index=len(replies),
        )
