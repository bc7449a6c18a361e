"""Seeded, deterministic generator of annotated automation queries (spans + expected groups).

    python tools/generate_automation_data.py --seed 13 --n 6000 --out data/automation/train/generated.jsonl

A build-time tool beside the package, not in it: it reads the vocabularies in
``data/automation/generator/vocab/`` and applies the model's own rules. Templates compose conditions
(events, states, times, delays, 到达…时, 一…就, 如果…就, 把…就, 每…, 且 / 或 compounds), actions
(vocab/actions.txt with their intents), durations, reminders, once markers, scope ends, super-task and
memo management, plain requests and built-in behaviours, with spoken fillers and punctuation variants.
Each row's spans come from the template; its expected groups come from the spec rules
(``models/automation/rules/``) applied to those spans, with intents from the vocabulary (the control
rule picks 车载控制 / 设备控制). Rows whose text is in the frozen fixture or the dev set are never written.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fastslow.features.automation_lexicons import load_automation_lexicons  # noqa: E402
from fastslow.models.automation.data import AUTOMATION_DEV_FILE, AUTOMATION_FIXTURE_FILE  # noqa: E402
from fastslow.models.automation.rules import analyse, assemble, automation_text, parse_markup, to_markup  # noqa: E402
from fastslow.models.automation.intents import CONTROL_INTENTS, control_intent  # noqa: E402
from fastslow.features.spoken import numerals, spoken_lexicon  # noqa: E402

VOCAB = ROOT / "data" / "automation" / "generator" / "vocab"


def read_lines(name: str) -> list[list[str]]:
    rows = []
    for raw in (VOCAB / name).read_text(encoding="utf-8").splitlines():
        if raw.strip() and not raw.lstrip().startswith("#"):
            rows.append([p.strip() for p in raw.split("\t")])
    return rows


class Vocab:
    def __init__(self):
        self.events = [r[0] for r in read_lines("events.txt") if len(r) == 1]
        self.seat_events = [r[0] for r in read_lines("events.txt") if len(r) > 1 and r[1] == "seat"]
        self.states = [r[0] for r in read_lines("states.txt")]
        self.times = [r[0] for r in read_lines("times.txt")]
        self.delays = [r[0] for r in read_lines("delays.txt")]
        self.durations = [r[0] for r in read_lines("durations.txt")]
        self.seats = [r[0] for r in read_lines("seats.txt")]
        self.actions = [(r[0], r[1], set((r[2] if len(r) > 2 else "").split(",")) - {""})
                        for r in read_lines("actions.txt")]
        self.reminders = [(r[0], len(r) > 1 and r[1] == "time") for r in read_lines("reminders.txt")]
        self.slots = {r[0]: r[1].split("|") for r in read_lines("slots.txt")}
        self.fillers = [r[0] for r in read_lines("fillers.txt")]
        self.super_tasks = [r[0] for r in read_lines("super_tasks.txt")]
        self.habits = [r[0] for r in read_lines("habits.txt")]
        self.memos = [r[0] for r in read_lines("memos.txt")]
        self.plain = [(r[0], r[1]) for r in read_lines("plain.txt")]
        self.statements = [r[0] for r in read_lines("statements.txt")]
        self.builtins = [tuple(r[0].split("|")) for r in read_lines("builtins.txt")]
        self.builtin_class: dict[str, list[str]] = {}
        for phrase, role in read_lines("builtin_class.txt"):
            self.builtin_class.setdefault(role, []).append(phrase)


# compositional time points (wide vocabularies; spoken clock times with minutes)
DAYS = ["今天", "明天", "后天", "大后天", "今晚", "明早", "明晚", "这周六", "这周日", "下周一", "下周三", "周末", "工作日",
        "每天", "每周二", "每周四", "每周六", "每个月五号", "每月一号", "国庆节", "元旦", "春节", "中秋节", "端午节",
        "圣诞节", "情人节", "年三十", "大年初一", "星期三", "礼拜天", "节假日"]
PERIODS = ["早上", "上午", "中午", "下午", "傍晚", "晚上", "凌晨", "半夜", "清晨", "夜里", "早晨"]
HOURS_CN = ["一", "两", "三", "四", "五", "六", "七", "八", "九", "十", "十一", "十二"]
MINUTES = ["", "", "", "半", "一刻", "三刻", "整", "零五", "十", "十五", "二十", "二十五", "三十", "四十", "四十五",
           "五十", "五十五", "零五分", "十分", "四十五分"]
AMOUNTS = ["一", "两", "三", "五", "十", "十五", "二十", "三十", "四十", "四十五", "五十", "九十", "半", "一个半", "两个半", "3",
           "5", "10", "15", "20", "30", "45", "90"]
ROOMS = ["客厅", "卧室", "主卧", "次卧", "书房", "儿童房", "厨房", "阳台", "家里", "餐厅", "衣帽间", "车库", "玄关"]
HOME_DEVICES = ["空调", "加湿器", "空气净化器", "热水器", "电热毯", "暖气", "地暖", "新风", "风扇", "灯", "台灯", "落地灯",
                "吸顶灯", "电视", "扫地机器人", "扫地机", "路由器", "窗帘", "音箱", "洗衣机", "烘干机", "洗碗机", "电饭煲", "净水器",
                "投影仪", "取暖器", "除湿机", "香薰机", "油汀", "电暖器", "晾衣架", "热水壶", "咖啡机", "摄像头"]
CAR_DEVICES = ["座椅加热", "座椅通风", "座椅按摩", "车窗", "空调", "遮阳帘", "阅读灯", "氛围灯", "后视镜加热", "方向盘加热",
               "香氛", "娱乐屏", "小桌板", "腿托", "靠背", "头枕音响", "车载冰箱", "天窗", "雨刮", "后挡风玻璃除雾",
               "前挡风玻璃除霜", "空气净化", "抬头显示", "电动尾门"]
ON_VERBS = ["打开", "开启", "开一下", "启动"]
OFF_VERBS = ["关闭", "关掉", "关上", "关了", "停掉"]
MEDIA_ACTIONS = [("打开收音机", "音乐播放"), ("打开电台", "音乐播放"), ("放一段相声", "音乐播放"), ("播放评书", "音乐播放"),
                 ("放点摇滚乐", "音乐播放"), ("来点爵士乐", "音乐播放"), ("播放儿歌", "音乐播放"), ("放一集播客", "音乐播放"),
                 ("播放今天的新闻", "音乐播放"), ("放一首{song}", "音乐播放"), ("听{singer}的新专辑", "音乐播放"),
                 ("给{contact}发条消息说我出发了", "电话"), ("给{contact}发微信说晚点到", "电话"), ("打视频电话给{contact}", "电话"),
                 ("给{contact}回个电话", "电话"), ("查一下{poi}的营业时间", "查询"), ("查一下明天的天气", "查询"),
                 ("看看今天的路况", "查询"), ("导航去{poi}", "导航"), ("找最近的服务区", "导航"), ("开启勿扰模式", "系统控制"),
                 ("把屏幕亮度调暗", "系统控制"), ("把音量调小一点", "系统控制"), ("讲个笑话", "闲聊"), ("讲个故事", "闲聊")]
PROHIBIT = ["别", "不要", "千万别", "不许"]


PLACES = ["公司", "家", "目的地", "学校", "机场", "小区门口", "超市", "加油站", "健身房", "幼儿园", "停车场", "医院",
          "公司楼下", "服务区", "高速口", "地库", "单位", "菜市场", "火车站", "体育馆", "球场", "图书馆", "丈母娘家", "姥姥家",
          "公园", "商场", "4S店", "充电站", "收费站", "景区", "露营地", "码头"]
BA_EVENTS = ["把车停好", "把车熄火", "把车门关上", "把车锁上", "把孩子送到学校", "把车开进车库", "把充电枪插上"]
YI_EVENTS = ["上车", "到家", "下车", "出门", "熄火", "下雨", "进隧道", "启动", "上高速", "坐进车里", "打开车门"]
CHECK_ITEMS = ["水", "食物", "胎压", "油量", "证件", "行李", "充电线", "雨伞", "零食", "药", "钥匙", "身份证", "护照",
               "充电宝", "外套", "纸巾", "玻璃水", "灭火器"]
CONNECTORS = ["", "", "，", "，", "然后", "并且", "再", "同时", "，然后", "和", "，再", "，并且", "并", "顺便"]
REMIND_VERBS = ["提醒我"] * 6 + ["通知我", "告诉我", "叫我", "喊我", "提示我", "提醒", "提醒一下我", "提醒我一下",
                                 "通知一下我", "播报", "报告"]
#: actions said in two or three characters, as a schedule runs them on (早上七点开灯七点半开窗帘八点关灯)
SHORT_ACTIONS = [("开灯", "设备控制"), ("关灯", "设备控制"), ("开窗帘", "设备控制"), ("关窗帘", "设备控制"),
                 ("拉窗帘", "设备控制"), ("开空调", "设备控制"), ("关空调", "设备控制"), ("开暖气", "设备控制"),
                 ("关暖气", "设备控制"), ("开风扇", "设备控制"), ("关电视", "设备控制"), ("开加湿器", "设备控制"),
                 ("放歌", "音乐播放"), ("放音乐", "音乐播放"), ("放新闻", "音乐播放"), ("开香氛", "车载控制"),
                 ("关香氛", "车载控制"), ("开天窗", "车载控制"), ("关车窗", "车载控制"), ("开座椅加热", "车载控制")]
#: events that come in pairs, said bare one after the other with a short action each (到家开灯离家关灯)
PAIRED_EVENTS = [("到家", "离家"), ("进隧道", "出隧道"), ("上车", "下车"), ("下雨", "天晴"), ("上高速", "下高速"),
                 ("有人回家", "家里没人"), ("我出门", "我回来"), ("主驾上车", "副驾上车"), ("天黑", "天亮"), ("起床", "睡觉")]
ONCE = ["只执行一次", "仅一次", "执行一次", "单次执行", "只执行一次就行", "仅执行一次"]
SCOPE_END = ["另外", "此外", "对了", "现在", "另外现在"]
SUPER_VERBS = ["删除", "打开", "关闭", "创建", "新建", "查看", "编辑", "修改", "删掉", "开启", "停用"]
MARKERS = [("{}时", 6), ("{}的时候", 5), ("{}后", 3), ("{}之后", 2), ("{}以后", 1), ("当{}时", 2),
           ("当{}的时候", 1), ("每当{}时", 1), ("每次{}", 1), ("每次{}的时候", 1), ("在{}之后", 1),
           ("在{}的时候", 1), ("{}了", 1), ("等{}了", 1)]
THEN_MARKERS = [("如果{}", 3), ("要是{}的话", 2), ("只要{}", 1), ("一旦{}", 1), ("{}了", 1), ("{}", 1), ("假如{}", 1)]
STATE_MARKERS = [("{}时", 5), ("{}的时候", 3), ("当{}时", 2), ("如果{}", 0), ("{}", 1)]


class Gen:
    def __init__(self, seed: int | str):
        self.rng = random.Random(seed)
        self.v = Vocab()

    # -- small pickers
    def pick(self, items):
        return self.rng.choice(items)

    def weighted(self, pairs):
        total = sum(w for _, w in pairs)
        x = self.rng.uniform(0, total)
        for item, w in pairs:
            x -= w
            if x <= 0:
                return item
        return pairs[-1][0]

    def fill(self, text: str) -> str:
        while "{" in text:
            start = text.index("{")
            end = text.index("}", start)
            slot = text[start + 1:end]
            value = self.pick(self.v.seats) if slot == "seat" else self.pick(self.v.slots[slot])
            text = text[:start] + value + text[end + 1:]
        return text

    def maybe(self, p: float) -> bool:
        return self.rng.random() < p

    # -- compositional words (vocabularies wider than any list)
    def clock(self) -> str:
        if self.maybe(0.25):
            h = self.rng.randint(1, 23)
            m = self.pick(["", "", ":00", ":15", ":30", ":45", "点", "点半", "点05", "点50", "点20"])
            return f"{h}{m}" if not m.startswith(":") else f"{h}{m}"
        return self.pick(HOURS_CN) + self.pick(["点", "点", "点钟"]) + self.pick(MINUTES)

    def time_point(self) -> str:
        parts = []
        if self.maybe(0.5):
            parts.append(self.pick(DAYS))
        if self.maybe(0.6):
            parts.append(self.pick(PERIODS))
        if self.maybe(0.85) or not parts:
            parts.append(self.clock())
        text = "".join(parts)
        return text.replace("点钟整", "点整").replace("钟半", "半").replace("点钟一刻", "点一刻").replace("点钟三刻", "点三刻")

    def amount(self, unit_pool=("分钟", "小时", "个小时", "个钟头", "分钟")) -> str:
        n = self.pick(AMOUNTS)
        unit = self.pick(unit_pool)
        if n in ("半", "一个半", "两个半"):
            unit = self.pick(["小时", "个小时"]) if n == "半" else "小时"
        if unit.startswith("个") and n[-1] in "个":
            unit = unit[1:]
        return n + unit

    def delay(self) -> str:
        return self.weighted([(self.amount() + self.pick(["后", "以后", "之后", "过后"]), 5), ("过" + self.amount(), 1)])

    def device_action(self) -> tuple[str, str]:
        """A device switched on or off in a room or at a seat, said verb first, object first or with 把."""
        if self.maybe(0.5):
            thing, intent = self.pick(["", "", self.pick(ROOMS)]) + self.pick(HOME_DEVICES), "设备控制"
        else:  # a device only a car has (娱乐屏, 小桌板): 车载控制 (the control rule decides known devices)
            thing, intent = self.pick(["", "", "", self.pick(self.v.seats)]) + self.pick(CAR_DEVICES), "车载控制"
        on = self.maybe(0.6)
        verb = self.pick(ON_VERBS if on else OFF_VERBS)
        form = self.weighted([("verb", 5), ("object", 2), ("ba", 2)])
        if form == "object":
            return thing + self.pick(["打开", "开一下", "开开"] if on else ["关掉", "关上", "关了", "关一下"]), intent
        if form == "ba":
            return "把" + thing + self.pick(["打开", "开了", "开开"] if on else ["关掉", "关了", "关上"]), intent
        return verb + thing, intent

    # -- conditions: each returns (list of pieces, needs_jiu)
    def event(self, seat_ok=True, action_ok=False) -> str:
        if seat_ok and self.maybe(0.12):
            return self.fill(self.pick(self.v.seat_events))
        if action_ok and self.maybe(0.1):  # the user's own action as the trigger: 打开空调后, 导航到公司之后
            return self.action_event()
        return self.pick(self.v.events)

    def action_event(self) -> str:
        text, intent, _ = self.action()
        while intent in ("电话", "查询", "系统控制"):
            text, intent, _ = self.action()
        return text

    def event_condition(self) -> list:
        kind = self.weighted([("marker", 10), ("then", 3), ("arrive", 2), ("yi", 2), ("ba", 1)])
        if kind == "marker":
            return [("C", self.weighted(MARKERS).format(self.event(action_ok=True)))]
        if kind == "then":
            return [("C", self.weighted(THEN_MARKERS).format(self.event())), (None, "就")]
        if kind == "arrive":
            form = self.pick(["到达{}时", "到达{}后", "到{}的时候", "到了{}", "到达{}的时候", "快到{}时"])
            return [("C", form.format(self.pick(PLACES)))] + ([(None, "就")] if form == "到了{}" else [])
        if kind == "yi":  # 一到家就开空调, and said without its 就 (天一黑把阳台灯打开)
            return [("C", "一" + self.pick(YI_EVENTS)), (None, "就")] if self.maybe(0.7) else \
                [("C", self.pick(["", "", "天", "我", "车"]) + "一" + self.pick(YI_EVENTS))]
        return [("C", self.pick(BA_EVENTS)), (None, "就")]

    def state_condition(self) -> list:
        form = self.weighted(STATE_MARKERS + [("如果{}", 2)])
        state = self.fill(self.pick(self.v.states))
        if form == "如果{}" or form == "{}":
            return [("C", form.format(state)), (None, "就")]
        return [("C", form.format(state))]

    def time_condition(self) -> list:
        kind = self.weighted([("time", 6), ("delay", 3), ("every", 1), ("time_event", 2)])
        if kind == "time":
            form = self.weighted([("{}", 6), ("{}的时候", 1), ("每天{}", 0), ("{}时", 1)])
            return [("C", form.format(self.time_point() if self.maybe(0.6) else self.pick(self.v.times)))]
        if kind == "delay":
            return [("C", self.delay() if self.maybe(0.6) else self.pick(self.v.delays))]
        if kind == "every":
            return [("C", "每隔" + self.pick(self.v.durations))]
        return [("C", self.pick(self.v.times) + self.weighted(MARKERS[:6]).format(self.event(seat_ok=False)))]

    def condition(self) -> list:
        kind = self.weighted([("event", 6), ("state", 3), ("time", 4)])
        return {"event": self.event_condition, "state": self.state_condition, "time": self.time_condition}[kind]()

    def and_condition(self) -> list:
        parts = [self.fill(self.pick(self.v.states)) for _ in range(self.rng.choice([2, 2, 3]))]
        if self.maybe(0.4):
            parts[0] = self.event(seat_ok=False)
        elif self.maybe(0.35):
            parts[0] = self.action_event()
        joiner = self.pick(["且", "且", "并且", "而且", "同时"])
        ending = self.pick(["时", "的时候", "时", ""])
        text = joiner.join(parts) + ending
        return [("C", text)] + ([(None, "就")] if not ending else [])

    def or_condition(self) -> list:
        n = self.rng.choice([2, 2, 3])
        parts = []
        for _ in range(n):
            if self.maybe(0.6):
                parts.append(self.event() + self.pick(["时", "的时候"]))
            else:
                parts.append(self.fill(self.pick(self.v.states)) + self.pick(["时", "的时候"]))
        if self.maybe(0.3):  # 上车或下车时: marker only once
            parts = [p.removesuffix("的时候").removesuffix("时") for p in parts[:-1]] + parts[-1:]
        return [("C", self.pick(["或", "或者", "或是"]).join(parts))]

    def jiu_compound(self) -> list:
        form = self.weighted([("time_state", 3), ("delay_state", 2), ("time_event", 2), ("event_state", 2)])
        state = self.fill(self.pick(self.v.states))
        if form == "time_state":
            text = self.pick(self.v.times) + self.pick(["", "如果", "要是"]) + state
        elif form == "delay_state":
            text = self.pick(["晚饭前", "午饭后", "下班前", "出发前", "到家前", "睡觉前"]) + \
                self.pick(["20分钟后", "十分钟", "半小时", "一小时后"]) + state
        elif form == "time_event":
            text = self.pick(self.v.times) + self.pick(["", "一"]) + self.event(seat_ok=False)
        else:
            text = self.event(seat_ok=False) + self.pick(["后", "以后", "了", ""]) + self.pick(["如果", ""]) + state
        return [("C", text), (None, self.pick(["就", "就", "的话就", "，就"]))]

    # -- actions
    def action(self, flag=None, exclude_flag=None) -> tuple[str, str, set]:
        pool = [a for a in self.v.actions if (flag is None or flag in a[2]) and
                (exclude_flag is None or exclude_flag not in a[2])]
        if flag is None and exclude_flag is None and self.maybe(0.25):
            if self.maybe(0.5):
                text, intent = self.device_action()
            else:
                text, intent = self.pick(MEDIA_ACTIONS)
            if self.maybe(0.06) and text.startswith(("打开", "播放", "放", "开启")):  # 别放摇滚乐, 不要开空调
                text = self.pick(PROHIBIT) + ("开" + text[2:] if text.startswith(("打开", "开启")) else
                                              "放" + text.removeprefix("播放").removeprefix("放"))
            return self.fill(text), intent, set()
        text, intent, flags = self.pick(pool)
        return self.fill(text), intent, flags

    def action_pieces(self, n=None, flag=None) -> list:
        n = n or self.weighted([(1, 8), (2, 4), (3, 1)])
        pieces = []
        for k in range(n):
            text, intent, _ = self.action(flag=flag)
            if k > 0:
                conn = self.pick(CONNECTORS)
                if conn:
                    pieces.append((None, conn))
            if self.maybe(0.12):
                pieces.append((None, self.pick(["帮我", "请", "给我", "自动"])))
            pieces.append(("A", text, intent))
        return pieces

    def reminder_action(self, with_time=None) -> tuple:
        pool = [c for c, t in self.v.reminders if with_time is None or t == with_time]
        verb = self.pick(REMIND_VERBS)
        content = self.pick(pool)
        if verb in ("播报", "报告"):
            content = self.pick(["电量", "路况", "剩余续航", "天气", "车内温度", content])
        return ("A", verb + content, "提醒")

    # -- templates: each returns (pieces, rules)
    def t_single(self):
        return self.condition() + self.optional_pause() + self.action_pieces(), ["bind_right", "condition_extraction"]

    def optional_pause(self):
        return [(None, self.pick(["，", ","]))] if self.maybe(0.2) else ([(None, self.pick(["帮我", "请", "就", "自动", "帮我自动", "你", "你就"]))] if self.maybe(0.15) else [])

    def t_jiu(self):
        return self.jiu_compound() + self.action_pieces(), ["compound_jiu"]

    def t_and(self):
        return self.and_condition() + self.optional_pause() + self.action_pieces(), ["compound_qie"]

    def t_or(self):
        return self.or_condition() + self.optional_pause() + self.action_pieces(), ["or_triggers"]

    def t_multi(self):
        pieces = self.condition() + self.action_pieces(n=self.pick([1, 1, 2]))
        pieces += [(None, self.pick(["", "，", "；", "，然后"]))]
        pieces += self.condition() + self.action_pieces(n=self.pick([1, 1, 2]))
        return [p for p in pieces if p[1] != ""], ["multi_scope"]

    def t_schedule(self):
        """Two or three times (or moments) in a row, each with a short action and mostly no pause between:
        早上七点开灯七点半开窗帘八点关灯, 早上上车的时候开香氛晚上下车的时候关香氛."""
        pieces = []
        events, pair = self.maybe(0.25), None
        for k in range(self.pick([2, 2, 3])):
            if k:
                pieces.append((None, self.pick(["", "", "", "，", "然后"])))
            if events and k == 0 and self.maybe(0.4):  # two events side by side, said bare: 到家开灯离家关灯
                pair = self.pick(PAIRED_EVENTS)
                cond = pair[0]
            elif events and k and pair:
                cond, pair = pair[1], None
            elif events:
                form = self.weighted(MARKERS[:3])
                cond = self.pick(["", "早上", "晚上", "中午"]) + form.format(self.pick(YI_EVENTS))
            else:
                cond = self.clock() if k else self.pick(["", "每天", "明天", "工作日"]) + self.pick(PERIODS) + self.clock()
            pieces.append(("C", cond))
            if self.maybe(0.2):
                pieces.append(self.reminder_action())
            else:
                text, intent = self.pick(SHORT_ACTIONS)
                pieces.append(("A", text, intent))
        return [p for p in pieces if p[1] != ""], ["multi_scope"]

    def t_no_left(self):
        pieces = self.action_pieces(n=self.pick([1, 1, 2]))
        pieces += [(None, self.pick(["", "", "，", "，然后", "然后"]))]
        pieces += self.condition() + self.action_pieces(n=self.pick([1, 1, 2]))
        return [p for p in pieces if p[1] != ""], ["no_left"]

    def t_duration(self):
        _, intent, _ = None, None, None
        text, intent, flags = self.action(flag="dur")
        if self.maybe(0.35):  # a device of a room or a seat (把书房加湿器开四十分钟)
            thing = self.pick([self.pick(ROOMS) + self.pick(HOME_DEVICES), self.pick(self.v.seats) + self.pick(CAR_DEVICES),
                               self.pick(HOME_DEVICES), self.pick(CAR_DEVICES)])
            text, intent = "打开" + thing, "设备控制"
        dur = self.pick(self.v.durations) if self.maybe(0.4) else self.amount()
        form = self.weighted([("verb", 4), ("bare", 3), ("object_verb", 3), ("sustain", 1), ("ba", 2)])
        bare = text.removeprefix("打开").removeprefix("开启").removeprefix("开").removeprefix("播放")
        if form == "bare" and bare != text:
            pieces = [("A", bare, intent), ("D", dur)]
        elif form == "object_verb" and bare != text and intent != "音乐播放":
            pieces = [("A", bare + self.pick(["开", "打开"]), intent), ("D", dur)]
        elif form == "ba" and bare != text and intent != "音乐播放":
            pieces = [("A", "把" + bare + self.pick(["打开", "开着", "开启", "开", "开", "再开"]), intent), ("D", dur)]
        elif form == "sustain":
            pieces = [("A", text, intent), (None, "，"), ("D", "持续" + dur)]
        else:
            pieces = [("A", text, intent), ("D", dur)]
        if self.maybe(0.15):
            pieces.append((None, self.pick(["就行", "就可以了", "就好", "就够了", "吧"])))
        cond = self.event_condition() if self.maybe(0.45) else []
        return cond + pieces, ["duration"] + (["missing_verb"] if form in ("bare", "object_verb") else [])

    def t_reminder(self):
        cond = self.condition() if self.maybe(0.8) else self.and_condition()
        return cond + [self.reminder_action(with_time=False)], ["reminder_rewrite"]

    def t_remind_say(self):
        cond = self.time_condition() if self.maybe(0.6) else self.condition()
        verb = self.pick(["提醒我", "提醒我", "提醒我", "通知我", "提醒我一下", "叫我"])
        content = self.pick([c for c, t in self.v.reminders if t])
        return cond + [("A", verb + content, "提醒")], ["remind_say"]

    def t_once(self):
        pieces = self.condition() + self.action_pieces(n=1)
        marker = self.pick(ONCE)
        if self.maybe(0.75):
            pieces += [(None, self.pick(["，", "", "，"])), ("N", marker)]
        else:
            pieces = [("N", marker), (None, "，")] + pieces
        return [p for p in pieces if p[1] != ""], ["once"]

    def t_super_task(self):
        kw = self.pick(self.v.super_tasks)
        form = self.weighted([("manage", 4), ("habit", 3), ("create_with", 3), ("save_as", 2), ("use", 2)])
        if form == "manage":
            mid = self.pick(["", "", "我的", "一个", "所有"]) if self.maybe(0.4) else ""
            return [("A", self.pick(SUPER_VERBS) + mid + kw, "系统控制")], ["default_super_task"]
        if form == "habit":
            habit = self.pick(self.v.habits)
            verb = self.pick(["删除", "修改", "取消", "关闭", "停用", "删掉"])
            pieces = [("A", verb + habit, "系统控制")] if self.maybe(0.7) else [("A", "把" + habit + "删了", "系统控制")]
            return pieces, ["default_super_task", "super_task_clause"]
        cond_actions = self.condition() + self.action_pieces(n=self.pick([1, 1, 2]))
        if form == "create_with":
            head = [("A", self.pick(["创建一个", "新建一个", "建一个", "添加一个", "设置一个"]) + kw, "系统控制"),
                    (None, self.pick(["，", "：", ":", "", "，"]))]
            return [p for p in head if p[1] != ""] + cond_actions, ["super_task_clause"]
        if form == "save_as":
            return cond_actions + [(None, "，"), ("A", self.pick(["保存为", "存成", "设为", "做成"]) + kw, "系统控制")], \
                ["super_task_clause"]
        return [(None, self.pick(["用", "通过", "在"])), ("A", kw, "系统控制"),
                (None, self.pick(["设置", "里添加", "实现", "帮我设置"]))] + cond_actions, ["super_task_clause"]

    def t_memo(self):
        text = self.pick(self.v.memos)
        if "{content}" in text:
            text = text.replace("{content}", self.pick([c for c, _ in self.v.reminders]))
        pieces = [("A", text, "提醒")]
        if self.maybe(0.2):
            pieces = [(None, self.pick(["帮我", "请"]))] + pieces
        return pieces, ["default_memo"]

    def t_plain(self):
        if self.maybe(0.45):
            text, intent = self.pick(self.v.plain)
            return [("A", text, intent)], ["null_plain"]
        return self.action_pieces(), ["null_plain"]

    def t_statement(self):
        """Context before a request (今天好累，放点音乐): no condition, one subquery with the request."""
        text, intent, _ = self.action()
        statement = self.pick(self.v.statements)
        joined = statement + self.pick(["，", ",", "，", ""]) + self.pick(["", "帮我", "请", "你"]) + text
        return [("A", joined, intent)], ["null_plain", "statement"]

    def t_pure(self):
        kind = self.weighted([("event", 3), ("state", 2), ("time", 2)])
        if kind == "event":
            cond = [("C", self.weighted(MARKERS[:9]).format(self.event()))]
        elif kind == "state":
            cond = [("C", self.fill(self.pick(self.v.states)) + self.pick(["时", "的时候", "的话"]))]
        else:
            cond = self.time_condition()
        if self.maybe(0.2):
            return self.action_pieces(n=1) + [(None, "，")] + cond, ["pure_condition", "no_left"]
        return cond, ["pure_condition"]

    def t_location(self):
        seats = self.v.seats
        if self.maybe(0.35):
            a, b = self.rng.sample(seats[:3], 2)
            if self.maybe(0.3):  # 主驾有人且副驾有人: one state said for each seat
                state = self.pick(["有人", "坐人", "系上安全带", "有乘客"])
                cond = [("C", a + state + self.pick(["且", "并且", "而且"]) + b + state + self.pick(["时", "的时候"]))]
            else:
                cond = [("C", a + self.pick(["和", "与", "、"]) + b + self.pick(["都有人时", "有人上车时", "都坐人的时候", "都系上安全带时"]))]
        else:
            cond = [("C", self.fill(self.pick(self.v.seat_events)) + self.pick(["时", "的时候", "后"]))]
            if self.maybe(0.3):
                cond = [("C", self.fill(self.pick(self.v.seat_events)) + "时或" + cond[0][1])]
        acts = self.action_pieces(n=self.pick([1, 1, 2]), flag="pos")
        if self.maybe(0.3):
            acts += [(None, "，"), ("A",) + self.action(exclude_flag="pos")[:2]]
        return cond + acts, ["location_inherit"]

    def t_builtin(self):
        if self.maybe(0.5):
            return self.builtin_composed(), ["builtin"]
        cond, act = self.pick(self.v.builtins)
        return [("C", cond), ("A", act, None)], ["builtin"]

    def builtin_composed(self) -> list:
        """A situation the car senses and what the car does in it, composed from builtin_class.txt: said with
        a trigger (时, 的时候, 以后), with 一…就, or run on without either before 就; one action or two."""
        cls = self.v.builtin_class
        situation = self.pick(cls["situation"])
        form = self.pick(["suffix", "suffix", "suffix", "jiu", "yi"])
        if form == "suffix":
            cond = [("C", situation + self.pick(["时", "的时候", "的时候", "以后", "之后", "了"]))]
        elif form == "jiu" or len(situation) > 3:  # 一…就 with a short verb: 一熄火就, 车一锁就
            cond = [("C", situation), (None, "就")]
        else:
            cond = [("C", self.pick(["", "车子", "车"]) + "一" + situation), (None, "就")]
        role = self.pick(["function", "self", "self", "subject", "signal", "reminder"])
        acts = [("A", self.pick(cls[role]), None)]
        if self.maybe(0.2):
            acts += [(None, self.pick(["并且", "然后", "，", "同时"])),
                     ("A", self.pick(cls[self.pick(["signal", "reminder", "self"])]), None)]
        return cond + acts

    def t_scope_end(self):
        pieces = self.condition() + self.action_pieces(n=self.pick([1, 2]))
        pieces += [(None, "，"), ("E", self.pick(SCOPE_END))] + self.action_pieces(n=1)
        return pieces, ["scope_end", "bind_right"]

    def t_reminder_noun(self):
        verb = self.pick(["创建", "设置一个", "添加一个", "新建一个", "帮我建一个", "创建一个", "帮我设一个", "加一个"])
        content = self.pick([c for c, t in self.v.reminders if not t])
        if self.maybe(0.4):
            a, b = self.rng.sample(CHECK_ITEMS, 2)
            content = self.pick(["检查", "准备", "带上", "买", "确认"]) + a + self.pick(["和", "与", "、", "还有"]) + b
        if self.maybe(0.3):
            return [(None, verb), ("A", content + self.pick(["的提醒", "提醒"]), "提醒")], ["default_memo", "reminder_noun"]
        return [(None, verb), *self.condition()[:1], ("A", content + "的提醒", "提醒")], ["reminder_noun"]

    def t_missing_verb(self):
        text, intent, flags = self.action(flag="dur")
        bare = text.removeprefix("打开").removeprefix("开启").removeprefix("开")
        if bare == text:
            return self.t_single()
        return self.event_condition() + [("A", bare, intent)], ["missing_verb"]

    TEMPLATES = [("t_single", 30), ("t_jiu", 7), ("t_and", 6), ("t_or", 5), ("t_multi", 6), ("t_schedule", 5), ("t_no_left", 7),
                 ("t_duration", 7), ("t_reminder", 8), ("t_remind_say", 5), ("t_once", 3), ("t_super_task", 6),
                 ("t_memo", 5), ("t_plain", 9), ("t_statement", 6), ("t_pure", 2), ("t_location", 6), ("t_builtin", 5),
                 ("t_scope_end", 2), ("t_reminder_noun", 4), ("t_missing_verb", 1)]

    def noise(self, pieces: list) -> list:
        """Spoken noise: a wake word or filler before, a particle after."""
        if self.maybe(0.15):
            pieces = [(None, self.pick(self.v.fillers))] + pieces
        if self.maybe(0.06):
            pieces = pieces + [(None, self.pick(["吧", "谢谢", "哈", "。", "！"]))]
        return pieces

    def spoken(self, pieces: list) -> list:
        """The row said aloud (spoken augmentation of every row): a wake word or hesitation before, a
        polite tail after, punctuation dropped as ASR drops it, digits said as numerals or the other way round.
        Only text outside the spans is added or dropped, so the spans (and the rules' groups) stay the row's."""
        lex = spoken_lexicon()
        out = list(pieces)
        if self.maybe(0.6):
            out = [(None, "".join(c for c in p[1] if c not in _ASR_DROPS)) if p[0] is None else p for p in out]
            out = [p for p in out if p[0] is not None or p[1]]
        if self.maybe(0.35):
            out = [(p[0], numerals(p[1]), *p[2:]) if p[0] in ("C", "D") else p for p in out]
        if self.maybe(0.5):
            head = self.pick(lex.wake_words) if self.maybe(0.5) else self.pick(lex.augment_fillers)
            out = [(None, head + self.pick(["", "", "，"]))] + out
        if self.maybe(0.35):
            out = out + [(None, self.pick(["", "，"]) + self.pick(lex.tails + ("吧", "哈", "好吗", "可以吗")))]
        return out

    def row(self, template: str, spoken: bool = False):
        """One row of ``template`` as markup, its rules, and its spoken variant (None unless ``spoken``)."""
        pieces, rules = getattr(self, template)()
        pieces = self.noise(inner_auto(pieces))
        variant = render(self.spoken(pieces)) if spoken else None
        return render(pieces), rules, variant


_ASR_DROPS = frozenset("，,。；;：:！!？? ")


def render(pieces: list) -> str:
    """Markup of template pieces: ``(None, text)`` outside any span, ``(kind, text[, intent])`` a span."""
    return "".join(
        p[1] if p[0] is None else (f"[{p[0]}/{p[2]}:{p[1]}]" if len(p) > 2 and p[2] else f"[{p[0]}:{p[1]}]")
        for p in pieces)


def inner_auto(pieces: list) -> list:
    """自动 said right before an action is part of it, quoted as said (到家后自动打开空调 → 自动打开空调;
    data/automation/README.md): a filler piece ending in 自动 gives it to the action after it."""
    out = []
    for piece in pieces:
        if piece[0] == "A" and out and out[-1][0] is None and out[-1][1].endswith("自动"):
            head = out.pop()[1][:-2]
            if head:
                out.append((None, head))
            piece = ("A", "自动" + piece[1], *piece[2:])
        out.append(piece)
    return out


def expected_groups(text, spans, lex) -> list[dict]:
    """The spec rules on the gold spans; a control intent follows the device/seat rule, but in a built-in behaviour,
    whose intent is its owner's by rule (a car's 自动关窗 is 车载控制)."""
    groups = assemble(analyse(text, lex), spans)
    for g in groups:
        for q in ([] if g.get("builtin") else g["querys"]):
            if q["intent"] in CONTROL_INTENTS or q["intent"] is None:
                q["intent"] = control_intent(q["subquery"], lex) or q["intent"]
    return groups


def held_out_texts() -> set:
    """Every query of the frozen fixture and of every automation dev file (the retired blind sets included),
    as ``said_core`` reads it: the generator never writes one, nor one said with other words around it."""
    texts = set()
    for path in (AUTOMATION_FIXTURE_FILE, AUTOMATION_DEV_FILE, *sorted(AUTOMATION_DEV_FILE.parent.glob("*.jsonl"))):
        if path.is_file():
            for raw in path.read_text(encoding="utf-8").splitlines():
                if raw.strip():
                    texts.add(said_core(automation_text(json.loads(raw)["query"])))
    return texts


def said_core(text: str, spans=()) -> str:
    """``text`` from its first span to its last (the wake word, filler or polite tail a row is said with left
    out), without punctuation or spaces: 嗯，走远时车门上锁吧 and 走远时车门上锁 are one query to the held-out check."""
    if spans:
        text = text[min(s.start for s in spans):max(s.end for s in spans)]
    return "".join(c for c in text if c not in _ASR_DROPS)


def generate(seed: int, n: int, spoken_share: float = 0.5) -> list[dict]:
    """About ``n`` rows, each template's share of them by its weight; after each row, with probability
    ``spoken_share``, its spoken variant (``Gen.spoken``) as a row of its own (source
    ``generator:<template>+spoken``), counted in the share. Each template draws from a stream of its own
    (seeded by the seed and its name), so adding, dropping or re-weighting one template leaves every other
    template's rows as they were, but for how many it gets."""
    lex = load_automation_lexicons()
    held_out = held_out_texts()
    total = sum(w for _, w in Gen.TEMPLATES)
    seen, rows = set(), []
    for template, weight in Gen.TEMPLATES:
        gen = Gen(f"{seed}:{template}")
        quota = len(rows) + round(n * weight / total)
        attempts = 0
        while len(rows) < quota and attempts < n * 50:
            attempts += 1
            markup, rules, variant = gen.row(template, spoken=gen.maybe(spoken_share))
            for source, marked in ((f"generator:{template}", markup), (f"generator:{template}+spoken", variant)):
                if marked is None or len(rows) >= quota:
                    continue
                text, spans = parse_markup(marked)
                if not text or text in seen or said_core(text, spans) in held_out:
                    continue
                seen.add(text)
                rows.append(annotated_row(f"gen-{len(rows) + 1:05d}", text, spans, rules, source, lex))
    return rows


def annotated_row(row_id: str, text: str, spans, rules: list, source: str, lex) -> dict:
    """One training row: the rules' groups of the spans, intents from the vocabulary or the keyword rule."""
    expected = expected_groups(text, spans, lex)
    if any(q["intent"] is None for g in expected for q in g["querys"]):
        from fastslow.models.automation.intents import IntentTaxonomy, keyword_intent
        taxonomy = IntentTaxonomy.load()
        for g in expected:
            for q in g["querys"]:
                q["intent"] = q["intent"] or keyword_intent(q["subquery"], taxonomy, lex)
    plain = to_markup(text, [s.__class__(s.kind, s.start, s.end, s.text) for s in spans])
    return {"id": row_id, "query": text, "markup": plain, "expected": expected, "rules": rules, "source": source}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--n", type=int, default=6000)
    parser.add_argument("--spoken-share", type=float, default=0.5,
                        help="share of rows followed by their spoken variant")
    parser.add_argument("--out", type=Path, default=ROOT / "data" / "automation" / "train" / "generated.jsonl")
    args = parser.parse_args(argv)
    rows = generate(args.seed, args.n, args.spoken_share)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(f"{len(rows)} rows → {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
