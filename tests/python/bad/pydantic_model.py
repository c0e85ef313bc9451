from pydantic import BaseModel

from piton import tool


class Order(BaseModel):
    item: str


@tool
def buy(order: Order) -> str:
    """Buy something (Pydantic is native code: refused at build)."""
    return order.item
